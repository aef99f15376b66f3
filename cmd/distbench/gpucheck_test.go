//go:build cgo

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/distbench/distbench/harness/gpucheck"
	"github.com/distbench/distbench/internal/cuda"
)

// gpu-check against the stand-in without NVML: what it loaded from where,
// the stand-in's device, NVML under missing, exit status 1; --json the
// same as a document; an argument is bad input.
func TestGPUCheck(t *testing.T) {
	useStandin(t)
	t.Setenv(cuda.EnvNVMLLib, "/nonexistent/libnvidia-ml.so.1")
	code, stdout, stderr := runCLI(t, "gpu-check")
	if code != 1 || stderr != "" {
		t.Errorf("exit %d, stderr %q; want 1 and nothing", code, stderr)
	}
	for _, want := range []string{"found in DISTBENCH_CUDART_LIB", "(2.18.0)", "GPU 0                 compute 0.0, 1 SMs", "missing:\n  telemetry: NVML: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runCLI(t, "gpu-check", "--json")
	var r gpucheck.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if r.NCCL.Version != "2.18.0" || len(r.GPUs) != 1 || len(r.Problems) != 1 {
		t.Errorf("JSON report %+v", r)
	}
	if code, _, stderr := runCLI(t, "gpu-check", "now"); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("with an argument: exit %d, stderr %q; want 2 and one line", code, stderr)
	}
}
