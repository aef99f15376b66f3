//go:build cgo

package nccl

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestRealCUDARuntimeNoDevice loads a real CUDA runtime (Debian's
// libcudart11.0 from non-free, or whatever DISTBENCH_REAL_CUDART names) and
// checks that a machine without a GPU or driver gets a clear error naming
// the cause: cudaErrorNoDevice (100) or cudaErrorInsufficientDriver (35).
// On a machine with a GPU it checks that a device is found.
func TestRealCUDARuntimeNoDevice(t *testing.T) {
	paths := []string{"libcudart.so.11.0", "libcudart.so.12", "libcudart.so"}
	if p := os.Getenv("DISTBENCH_REAL_CUDART"); p != "" {
		paths = []string{p}
	}
	var why []string
	for _, p := range paths {
		n, err, ok := probeCUDART(p)
		if !ok {
			why = append(why, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		t.Logf("%s: %d devices, error %v", p, n, err)
		if err == nil {
			if n < 1 {
				t.Errorf("%s: no error and %d devices", p, n)
			}
			return
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "nccl: no usable GPU: cudaGetDeviceCount: ") ||
			!(strings.Contains(msg, "cudaErrorNoDevice (100)") || strings.Contains(msg, "cudaErrorInsufficientDriver (35)")) {
			t.Errorf("%s: unclear error %q", p, msg)
		}
		return
	}
	t.Skipf("no real CUDA runtime here (apt-get install libcudart11.0 from Debian's non-free): %s", strings.Join(why, "; "))
}
