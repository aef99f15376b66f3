//go:build cgo

package nccl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/cuda"
)

// TestFindsWheelNCCL: with no variable naming it, NCCL is found in a
// virtual environment's nvidia-nccl wheel (site-packages/nvidia/nccl/lib),
// as on the GPU machines whose PyTorch brings it, and is then what the
// strategy runs; where there is none anywhere, one line says where it was
// looked for.
func TestFindsWheelNCCL(t *testing.T) {
	if standin == "" {
		t.Skip("the environment names real libraries")
	}
	lib, err := os.ReadFile(standin)
	if err != nil {
		t.Fatal(err)
	}
	venv := t.TempDir()
	dir := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "nccl", "lib")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "libnccl.so.2"), lib, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvNCCLLib, "")
	t.Setenv("PATH", "/nonexistent") // no python3 to ask
	t.Setenv("CUDA_HOME", "")
	t.Setenv("CONDA_PREFIX", "")

	t.Run("found", func(t *testing.T) {
		t.Setenv("VIRTUAL_ENV", venv)
		got, v, err := Library()
		if err != nil {
			t.Fatal(err)
		}
		if got.From == cuda.SystemPath || strings.HasPrefix(got.From, "CUDA toolkit") {
			t.Skipf("this machine's own NCCL (%s, %s) comes first", got.Path, got.From)
		}
		if got.Path != filepath.Join(dir, "libnccl.so.2") || got.From != "Python environment "+venv+" (NVIDIA's wheel)" || v != 21800 {
			t.Errorf("Library() = %+v, version %d", got, v)
		}
		if err := (strategy{}).Available(); err != nil {
			t.Errorf("Available() = %v", err)
		}
	})
	t.Run("nowhere", func(t *testing.T) {
		t.Setenv("VIRTUAL_ENV", t.TempDir())
		err := (strategy{}).Available()
		const want = "nccl: NCCL (libnccl.so.2) not found in the system's library path, CUDA toolkits or Python environments' NVIDIA wheels (install NCCL, name it in DISTBENCH_NCCL_LIB, or choose --strategy ring)"
		if err == nil {
			t.Skip("this machine has NCCL of its own")
		}
		if err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
}
