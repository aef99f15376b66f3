//go:build cgo

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/cuda"
	"github.com/distbench/distbench/results"
)

// --device takes cpu or cuda; cuda without a CUDA runtime (here one that
// does not exist; on a machine without a GPU, Debian's, see internal/cuda)
// is one line saying so, exit 2, for run and sweep alike.
func TestDeviceBadInput(t *testing.T) {
	t.Setenv(cuda.EnvCUDARTLib, "/nonexistent/libcudart.so")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"run unknown", []string{"run", "--device", "tpu"}, `--device: unknown device "tpu" (accepted: cpu, cuda)`},
		{"run no runtime", []string{"run", "--device", "cuda"}, "cuda: the CUDA runtime (/nonexistent/libcudart.so) not found (install it, or choose --device cpu)"},
		{"sweep unknown", []string{"sweep", "--strategy", "ring", "--np", "2", "--sizes", "1KiB", "--device", "tpu", "--dry-run"}, `devices: unknown device "tpu" (accepted: cpu, cuda)`},
		{"sweep no runtime", []string{"sweep", "--strategy", "ring", "--np", "2", "--sizes", "1KiB", "--device", "cpu,cuda", "--out", t.TempDir() + "/run"},
			"cuda: the CUDA runtime (/nonexistent/libcudart.so) not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "distbench: ") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tt.want)
			}
		})
	}
}

// The sweep make gpu-check runs, here against the stand-in: allreduce of
// nccl, ring, tree and ps on device buffers, one process per rank, every
// point checked, the records marked as device points and the report
// drawing them as lines of their own.
func TestSweepOnDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a library and starts processes")
	}
	useStandin(t)
	out := t.TempDir() + "/run"
	code, stdout, stderr := runCLI(t, "sweep", "--strategy", "nccl,ring,tree,ps", "--np", "2", "--collective", "allreduce",
		"--sizes", "4KiB,256KiB", "--device", "cuda", "--iters", "3", "--warmup", "1", "--timeout", "1m", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	points := 0
	for _, r := range run.Records {
		if r.Kind != results.KindCollective {
			continue
		}
		points++
		if r.Device != "cuda" || r.Wrong != 0 || r.Error != "" || !strings.Contains(r.Point, "/device=cuda") {
			t.Errorf("%s: device %q, %d wrong, error %q", r.Point, r.Device, r.Wrong, r.Error)
		}
	}
	if points != 8 {
		t.Errorf("%d points, want 4 strategies × 2 sizes", points)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(report), "nccl (cuda)") {
		t.Errorf("report does not draw the device runs (%v)", err)
	}
}
