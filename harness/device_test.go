//go:build cgo

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/cuda"
	_ "github.com/distbench/distbench/strategies/nccl"
)

// standinRuntime points the CUDA runtime and NCCL loaders at the stand-in
// the nccl strategy's tests build (device memory that is host memory).
func standinRuntime(t *testing.T) {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	lib := filepath.Join(t.TempDir(), "libnccl.so.2")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-pthread", "-o", lib, "../strategies/nccl/testdata/standin.c").CombinedOutput(); err != nil {
		t.Skipf("cannot build the stand-in runtime with %s: %v\n%s", cc, err, out)
	}
	t.Setenv(cuda.EnvCUDARTLib, lib)
	t.Setenv("DISTBENCH_NCCL_LIB", lib)
}

// With --device cuda every collective, in both forms, runs on device
// buffers (checked after copying its results down) through a staging
// strategy (ring) and the native one (nccl), with #wrong 0 and the device
// in the record and the point's id.
func TestMeasureOnDevice(t *testing.T) {
	standinRuntime(t)
	for _, strategy := range []string{"ring", "nccl"} {
		for _, coll := range job.Collectives() {
			if tr, _ := job.TraitsOf(coll); tr.PointToPoint && coll != "sendrecv" {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", strategy, coll), func(t *testing.T) {
				spec := &job.Spec{Strategy: strategy, NP: 3, Device: "cuda", Timeout: time.Minute, Iters: 2, Warmup: 1, Check: true}
				for _, inplace := range []bool{false, true} {
					spec.Points = append(spec.Points, job.Point{Collective: coll, Bytes: 3 * 1000 * 8, DType: "float32", Op: "avg", Root: 2, InPlace: inplace})
				}
				for _, rec := range measureInProcess(t, spec) {
					if rec.Error != "" || (coll != "barrier" && rec.Wrong != 0) {
						t.Errorf("%s: error %q, %d wrong", rec.Point, rec.Error, rec.Wrong)
					}
					if rec.Device != "cuda" {
						t.Errorf("%s: record's device %q, want cuda", rec.Point, rec.Device)
					}
				}
			})
		}
	}
}

func TestDeviceValidation(t *testing.T) {
	tests := []struct {
		device, lib, want string
	}{
		{"tpu", "", `--device: unknown device "tpu" (accepted: cpu, cuda)`},
		{"cuda", "/nonexistent/libcudart.so", "cuda: the CUDA runtime (/nonexistent/libcudart.so) not found (install it, or choose --device cpu)"},
	}
	for _, tc := range tests {
		t.Run(tc.device, func(t *testing.T) {
			if tc.lib != "" {
				t.Setenv(cuda.EnvCUDARTLib, tc.lib)
			}
			spec := &job.Spec{Strategy: "ring", NP: 2, Device: tc.device, Timeout: time.Minute, Iters: 1}
			err := spec.Validate()
			if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDeviceRefusesP2P(t *testing.T) {
	standinRuntime(t)
	spec := &job.Spec{Strategy: "ring", NP: 2, Device: "cuda", Timeout: time.Minute, Iters: 1,
		Points: []job.Point{{Collective: "p2p-bw", Bytes: 64, DType: "float32"}}}
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "p2p-bw runs on host buffers only") {
		t.Errorf("Validate() = %v", err)
	}
}
