//go:build cgo

package gpucheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/cuda"
)

// TestCheckStandin: against the stand-in NCCL and runtime (one device of
// host memory), what a run loads, from where, its versions and device;
// without NVML, one problem, saying sweeps run without telemetry.
func TestCheckStandin(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libnccl.so.2")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-pthread", "-o", lib, "../../strategies/nccl/testdata/standin.c").CombinedOutput(); err != nil {
		t.Skipf("cannot build the stand-in with %s: %v\n%s", cc, err, out)
	}
	t.Setenv(cuda.EnvCUDARTLib, lib)
	t.Setenv(cuda.EnvNCCLLib, lib)
	t.Setenv(cuda.EnvNVMLLib, "/nonexistent/libnvidia-ml.so.1")
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	t.Setenv("RANK", "3")
	t.Setenv("LOCAL_RANK", "1")
	r := Check()
	want := Lib{Name: "the CUDA runtime", Path: lib, From: cuda.EnvCUDARTLib, Version: "12.0"}
	if r.Runtime != want {
		t.Errorf("runtime %+v, want %+v", r.Runtime, want)
	}
	if want := (Lib{Name: "NCCL", Path: lib, From: cuda.EnvNCCLLib, Version: "2.18.0"}); r.NCCL != want {
		t.Errorf("NCCL %+v, want %+v", r.NCCL, want)
	}
	if r.Driver.Version != "12.0" {
		t.Errorf("driver %+v, want the stand-in's CUDA 12.0", r.Driver)
	}
	wantGPU := GPU{Ordinal: 0, PCIBusID: "0000:00:00.0", Compute: "0.0", SMs: 1, FreeBytes: 1 << 30, TotalBytes: 1 << 30}
	if len(r.GPUs) != 1 || r.GPUs[0] != wantGPU {
		t.Errorf("GPUs %+v, want [%+v]", r.GPUs, wantGPU)
	}
	if p := r.Placement; p == nil || *p != (cuda.Placement{Ordinal: 0, Local: 1, From: "LOCAL_RANK"}) {
		t.Errorf("placement %+v, want GPU 0 from LOCAL_RANK=1", p)
	}
	if len(r.Problems) != 1 || !strings.HasPrefix(r.Problems[0], "telemetry: NVML: ") || !strings.HasSuffix(r.Problems[0], "(sweeps run without GPU telemetry)") {
		t.Errorf("problems %q, want NVML's alone", r.Problems)
	}
}

// TestCheckNothing: no library anywhere it is named, one line each.
func TestCheckNothing(t *testing.T) {
	t.Setenv(cuda.EnvCUDARTLib, "/nonexistent/libcudart.so")
	t.Setenv(cuda.EnvNCCLLib, "/nonexistent/libnccl.so.2")
	t.Setenv(cuda.EnvNVMLLib, "/nonexistent/libnvidia-ml.so.1")
	r := Check()
	want := []string{
		"cuda: the CUDA runtime (/nonexistent/libcudart.so) not found (install it, or choose --device cpu): ",
		"nccl: NCCL (/nonexistent/libnccl.so.2) not found",
		"telemetry: NVML: ",
	}
	if len(r.Problems) != len(want) {
		t.Fatalf("problems %q, want %d", r.Problems, len(want))
	}
	for i, p := range r.Problems {
		if !strings.HasPrefix(p, want[i]) || strings.Contains(p, "\n") {
			t.Errorf("problem %d: %q, want one line starting %q", i, p, want[i])
		}
	}
	if r.OK() || len(r.GPUs) != 0 || r.Runtime.Path != "" || r.NCCL.Path != "" || r.NVML.Path != "" {
		t.Errorf("report %+v", r)
	}
}
