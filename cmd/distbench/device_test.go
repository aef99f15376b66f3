//go:build cgo

package main

import (
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/cuda"
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
