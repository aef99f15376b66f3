//go:build cgo

package cuda

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/collective"
)

// standin builds the nccl strategy's stand-in runtime (whose device memory
// is host memory) and returns its path.
func standin(t *testing.T) string {
	return standinAt(t, filepath.Join(t.TempDir(), "libcudart-standin.so"))
}

// standinAt builds the stand-in at path, with the C compiler's flags given.
func standinAt(t *testing.T, path string, flags ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append(flags, "-shared", "-fPIC", "-O2", "-pthread", "-o", path, "../../strategies/nccl/testdata/standin.c")
	out, err := exec.Command(cc, args...).CombinedOutput()
	if err != nil {
		t.Skipf("cannot build the stand-in runtime with %s: %v\n%s", cc, err, out)
	}
	return path
}

// TestMemory allocates, copies (up, down, within the device, from a
// slice's offset) and pins, on the stand-in's device, or with
// DISTBENCH_REAL_LIBS=1 on a real GPU through the runtime the search finds
// (scripts/gpu-proof.sh).
func TestMemory(t *testing.T) {
	if os.Getenv("DISTBENCH_REAL_LIBS") != "1" {
		t.Setenv(EnvCUDARTLib, standin(t))
	}
	if n, err := DeviceCount(); err != nil || n < 1 {
		t.Fatalf("DeviceCount() = %d, %v; want a device", n, err)
	}
	mem, free, err := Alloc(0, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	src := make([]byte, 64)
	for i := range src {
		src[i] = byte(i)
	}
	if err := mem.FromHost(src); err != nil {
		t.Fatal(err)
	}
	// A slice copies from its offset; a device-to-device copy lands there.
	got := make([]byte, 16)
	if err := mem.Slice(8, 24).ToHost(got); err != nil || !bytes.Equal(got, src[8:24]) {
		t.Fatalf("slice [8:24] = %v, %v; want %v", got, err, src[8:24])
	}
	if err := mem.Slice(0, 16).FromDevice(mem.Slice(48, 64)); err != nil {
		t.Fatal(err)
	}
	all := make([]byte, 64)
	if err := mem.ToHost(all); err != nil || !bytes.Equal(all[:16], src[48:]) {
		t.Fatalf("after a device copy: %v, %v", all[:16], err)
	}
	pin, unpin, err := mem.PinnedHost(4096)
	if err != nil || len(pin) != 4096 {
		t.Fatalf("PinnedHost(4096) = %d bytes, %v", len(pin), err)
	}
	pin[4095] = 1 // writable host memory
	unpin()
	unpin() // freeing twice is harmless

	tensor := collective.DeviceTensor(collective.Float32, mem)
	if tensor.Count() != 16 || !tensor.OnDevice() || tensor.Device() != collective.CUDA {
		t.Errorf("device tensor: %v, %d elements", tensor, tensor.Count())
	}
	if err := mem.ToHost(make([]byte, 63)); err == nil {
		t.Error("a copy of the wrong size was accepted")
	}
}

// Without a runtime, or with Debian's real one on a machine without a GPU
// or driver, --device cuda gets one line that says why.
func TestNoDevice(t *testing.T) {
	tests := []struct {
		name, lib string
		want      []string // each of one of the message's accepted forms
	}{
		{"no runtime", "/nonexistent/libcudart.so", []string{"cuda: the CUDA runtime (/nonexistent/libcudart.so) not found (install it, or choose --device cpu)"}},
		{"Debian's runtime, no GPU", "libcudart.so.11.0", []string{
			"cuda: no usable GPU: cudaGetDeviceCount: cudaErrorInsufficientDriver (35)",
			"cuda: no usable GPU: cudaGetDeviceCount: cudaErrorNoDevice (100)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvCUDARTLib, tc.lib)
			n, err := DeviceCount()
			if err == nil {
				if tc.lib == "libcudart.so.11.0" {
					t.Skipf("this machine has %d GPUs", n)
				}
				t.Fatalf("found %d devices", n)
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "not found") && tc.lib == "libcudart.so.11.0" {
				t.Skipf("Debian's libcudart11.0 (non-free) is not installed: %v", err)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message has several lines: %q", msg)
			}
			for _, w := range tc.want {
				if strings.HasPrefix(msg, w) {
					return
				}
			}
			t.Errorf("got %q, want it to start with one of %q", msg, tc.want)
		})
	}
}
