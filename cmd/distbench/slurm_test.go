package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlurm runs distbench under a real Slurm: `make slurm-test` starts a
// one-node cluster (scripts/slurm-local.sh) and runs this test with its
// SLURM_CONF; elsewhere it skips. Each rank runs the test binary as
// distbench, finds its rank in SLURM_PROCID and rank 0's host in
// SLURM_STEP_NODELIST.
func TestSlurm(t *testing.T) {
	if os.Getenv("SLURM_CONF") == "" {
		t.Skip("no Slurm cluster: make slurm-test starts one (Debian: apt-get install slurm-wlm munge)")
	}
	if _, err := exec.LookPath("srun"); err != nil {
		t.Skip("srun not found")
	}
	t.Setenv(envArgv, "1")
	if host, _ := os.Hostname(); host != "" {
		if _, err := net.LookupHost(strings.Split(host, ".")[0]); err != nil {
			// The node list names the host; where the name does not
			// resolve, rank 0 is reached at loopback instead.
			t.Logf("%s does not resolve (%v): MASTER_ADDR=127.0.0.1", host, err)
			t.Setenv("MASTER_ADDR", "127.0.0.1")
		}
	}
	code, stdout, stderr := runCLI(t, "run", "--launcher", "srun", "--np", "4", "-c", "1",
		"-b", "4KiB", "-e", "64KiB", "-f", "16", "-n", "3", "-w", "1", "--timeout", "1m")
	if code != 0 {
		t.Fatalf("run under srun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	engineRows(t, stdout, 2)

	out := filepath.Join(t.TempDir(), "sweep")
	code, stdout, stderr = runCLI(t, "sweep", "--launcher", "srun", "--out", out, "--strategy", "ring,tree", "--np", "2,4",
		"-b", "4KiB", "-e", "64KiB", "-f", "16", "-n", "3", "-w", "1", "--rounds", "1", "--timeout", "1m")
	if code != 0 || !strings.Contains(stdout, "8 of 8 points measured") {
		t.Fatalf("sweep under srun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
