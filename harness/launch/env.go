package launch

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/distbench/distbench/harness/job"
)

// Environment variables through which a launcher hands a worker its job.
// Rank and world size come from the launcher's own variables (RANK and
// WORLD_SIZE from the local launcher or torchrun, OMPI_COMM_WORLD_* from
// mpirun, SLURM_* from srun); see rendezvous.FromEnv.
const (
	EnvSpec        = "DISTBENCH_SPEC"         // the Spec as JSON
	EnvInit        = "DISTBENCH_INIT"         // rendezvous URL; default env://
	EnvJobID       = "DISTBENCH_JOB_ID"       // keeps jobs sharing a store apart
	EnvToken       = "DISTBENCH_TOKEN"        // hex job secret for the handshakes of the mesh, the store and servers
	EnvServerIndex = "DISTBENCH_SERVER_INDEX" // set for a strategy's server process
	EnvServerCount = "DISTBENCH_SERVER_COUNT"
	EnvListenHost  = "DISTBENCH_LISTEN_HOST" // interface to bind; default: see ListenHost
	EnvCPUProfile  = "DISTBENCH_CPUPROFILE"  // write each process's CPU profile to PREFIX.rankN.pprof
	EnvSpin        = "DISTBENCH_SPIN"        // transport busy-read budget, e.g. 50us; see transport.TCPOptions.Spin
	EnvCPUs        = "DISTBENCH_CPUS"        // CPUs to bind this process to, e.g. "2,3"; "none" binds nothing
	// EnvLauncherFD is set by the local launcher: an inherited pipe whose
	// write end only the launcher holds, so that its end of file means the
	// launcher is gone, however it died; the process then exits.
	EnvLauncherFD = "DISTBENCH_LAUNCHER_FD"
)

// RecordPrefix starts each line on which rank 0 writes a record to stdout.
const RecordPrefix = "distbench-record "

// Spin is the transport's busy-read budget: DISTBENCH_SPIN when set (the
// local launcher sets it when the job's processes fit the machine's cores),
// else none, since spinning on an oversubscribed machine only takes cores
// from the peers being waited for.
func Spin(getenv func(string) string) time.Duration {
	d, err := time.ParseDuration(getenv(EnvSpin))
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// specFromEnv reads and validates the spec the launcher put in EnvSpec.
func specFromEnv(getenv func(string) string) (*job.Spec, error) {
	raw := getenv(EnvSpec)
	if raw == "" {
		return nil, fmt.Errorf("%s is not set: workers are started by `distbench run` or `distbench sweep`, or by a launcher that sets it", EnvSpec)
	}
	var spec job.Spec
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvSpec, err)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &spec, nil
}

// ListenHost is the address a rank's listeners bind: DISTBENCH_LISTEN_HOST
// when set; else, under an engine whose MASTER_ADDR is another host, the
// local address of the route to it (the interface the job's traffic
// leaves by, as torch's c10d finds its own); else loopback, where the
// local launcher's ranks all are.
func ListenHost(getenv func(string) string) string {
	if h := strings.TrimSpace(getenv(EnvListenHost)); h != "" {
		return h
	}
	master := strings.TrimSpace(getenv("MASTER_ADDR"))
	if master == "" || master == "localhost" {
		return "127.0.0.1"
	}
	if ip := net.ParseIP(master); ip != nil && ip.IsLoopback() {
		return "127.0.0.1"
	}
	// A UDP "connection" sends nothing: it only asks the kernel which
	// local address routes to the master.
	c, err := net.DialTimeout("udp", net.JoinHostPort(master, "9"), 2*time.Second)
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsUnspecified() {
		return a.IP.String()
	}
	return "127.0.0.1"
}
