package main

import (
	"net"
	"strings"
	"testing"
)

// TestDoctorCLI: alone, doctor finds nothing wrong here and exits 0; as
// rank 1 of a job whose rank 0 is nowhere, one line naming the address,
// exit 1.
func TestDoctorCLI(t *testing.T) {
	for _, k := range []string{"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS"} {
		t.Setenv(k, "")
	}
	code, stdout, stderr := runCLI(t, "doctor")
	if code != 0 || !strings.Contains(stdout, "# doctor: no problem found across 1 rank(s): the job would start") {
		t.Fatalf("alone: exit %d\n%s%s", code, stdout, stderr)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	t.Setenv("RANK", "1")
	t.Setenv("WORLD_SIZE", "2")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", port)
	k, v, _ := strings.Cut(testTokenEnv, "=")
	t.Setenv(k, v)
	code, stdout, stderr = runCLI(t, "doctor", "--timeout", "1s")
	if code != 1 || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, "cannot reach rank 0 at 127.0.0.1:"+port) {
		t.Fatalf("rank 1 without rank 0: exit %d, want 1 and one line\n%s%s", code, stdout, stderr)
	}
}
