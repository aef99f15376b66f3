package transport

import (
	"os"
	"strings"
)

// EnvHostID overrides a process's host identity (HostIdentity): ranks
// given the same value are treated as one host, and ranks given different
// values as different hosts, whatever machine they run on. Tests and
// single-machine studies use it to lay ranks out as hosts ("2 hosts × 2
// ranks") over loopback.
const EnvHostID = "DISTBENCH_HOST_ID"

// HostIdentity names the host this process runs on, as the mesh publishes
// it (driver.Topology). Two processes share a host when they share memory
// and a network stack: the host name, the kernel's boot id and the network
// namespace together, so that the network-namespace "hosts" of one machine
// (scripts/netns-cluster.sh) count as the separate hosts they model, while
// containers sharing a host's network count as one. DISTBENCH_HOST_ID,
// when set, replaces the whole.
func HostIdentity() string {
	if id := os.Getenv(EnvHostID); id != "" {
		return id
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	parts := []string{host}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		parts = append(parts, strings.TrimSpace(string(b)))
	}
	if ns, err := os.Readlink("/proc/self/ns/net"); err == nil {
		parts = append(parts, ns)
	}
	return strings.Join(parts, "/")
}
