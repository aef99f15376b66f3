package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/reports/nccltests"
)

// netnsCluster is scripts/netns-cluster.sh's cluster of hosts for one test:
// namespaces joined by a bridge, each host's NIC shaped to a rate.
type netnsCluster struct {
	t      *testing.T
	prefix string
}

const netnsScript = "../../scripts/netns-cluster.sh"

// newNetnsCluster makes hosts namespaces, or skips the test saying why
// it cannot (not root, no iproute2, no namespaces in this container).
func newNetnsCluster(t *testing.T, hosts int, rate string) *netnsCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (Debian: apt-get install iproute2)", tool)
		}
	}
	// Short and per process: interface names have 15 bytes, and test
	// binaries of several packages may run at once.
	c := &netnsCluster{t: t, prefix: fmt.Sprintf("t%d", os.Getpid()%100000)}
	if out, err := c.script("up", fmt.Sprint(hosts), rate); err != nil {
		c.script("down")
		t.Skipf("cannot make network namespaces here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := c.script("down"); err != nil {
			t.Errorf("netns-cluster down: %v: %s", err, out)
		}
	})
	return c
}

func (c *netnsCluster) script(args ...string) (string, error) {
	cmd := exec.Command(netnsScript, args...)
	cmd.Env = append(os.Environ(), "DISTBENCH_NETNS_PREFIX="+c.prefix)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *netnsCluster) addr(host int) string {
	out, err := c.script("addr", fmt.Sprint(host))
	if err != nil {
		c.t.Fatal(err, out)
	}
	return strings.TrimSpace(out)
}

// TestNamespaceHosts runs 4 ranks on 2 hosts, each a network namespace
// whose NIC is shaped to 200 Mbit/s, through `run --launcher env` as an
// engine would start them: every rank its own process, rank 0 reached at
// its host's address, every listener bound to its own host's address,
// found from the route to rank 0 (launch.ListenHost). The
// ring's busbw must stay under the NIC's rate (its traffic crossed the
// shaped links: loopback alone is a hundred times faster) and every
// element must be right.
func TestNamespaceHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const hosts, perHost, rateBits = 2, 2, 200e6
	c := newNetnsCluster(t, hosts, "200mbit")
	token := make([]byte, 16)
	rand.Read(token)
	args, _ := json.Marshal([]string{"run", "--launcher", "env", "--np", fmt.Sprint(hosts * perHost), "--strategy", "ring",
		"-b", "1MiB", "-e", "2MiB", "-n", "3", "-w", "1", "--timeout", "2m"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	type proc struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	var procs []*proc
	for r := range hosts * perHost {
		host := r / perHost
		p := &proc{cmd: exec.CommandContext(ctx, "ip", "netns", "exec", c.prefix+fmt.Sprintf("h%d", host), os.Args[0])}
		p.cmd.Env = append(os.Environ(), envLaunch+"="+string(args),
			fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", hosts*perHost),
			"MASTER_ADDR="+c.addr(0), "MASTER_PORT=29511", "DISTBENCH_TOKEN="+hex.EncodeToString(token))
		// No DISTBENCH_LISTEN_HOST: each rank binds the address its
		// route to MASTER_ADDR leaves by, its own host's.
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	for r, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("rank %d: %v\n%s", r, err, p.out.String())
		}
	}
	if t.Failed() {
		return
	}
	out := procs[0].out.String()
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		row, err := nccltests.ParseRow(line)
		if err != nil {
			continue
		}
		rows++
		for side := range 2 {
			if row.Wrong[side] != "0" || row.BusBW[side] <= 0 || row.BusBW[side] > 1.1*rateBits/8/1e9 {
				t.Errorf("size %d: busbw %v GB/s, #wrong %s: want at most the NIC's %.3f GB/s, none wrong",
					row.Size, row.BusBW[side], row.Wrong[side], rateBits/8/1e9)
			}
		}
	}
	if rows != 2 {
		t.Errorf("%d rows, want 2:\n%s", rows, out)
	}
}
