//go:build cgo

package cuda

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadFromTree loads the runtime from a fake machine: a CUDA 13
// toolkit whose runtime is too new for the driver (a stand-in answering
// cudaErrorInsufficientDriver) and a venv holding CUDA 12's wheel (a
// stand-in that works). The search passes over the first and takes the
// wheel's, says where it came from, and the runtime's calls then reach it.
func TestLoadFromTree(t *testing.T) {
	root := t.TempDir()
	tooNew := standinAt(t, filepath.Join(root, "usr/local/cuda-13.0/lib64/libcudart.so.13"), "-DSTANDIN_COUNT_ERROR=35")
	wheel := standinAt(t, filepath.Join(root, "venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"))
	env := map[string]string{"VIRTUAL_ENV": filepath.Join(root, "venv"), "PATH": "/nonexistent"}
	f := Finder{Root: root, NoSystem: true, Getenv: func(k string) string { return env[k] }, SysPath: func() []string { return nil }}
	t.Cleanup(func() { loadedKey = "" }) // the next test's load searches again

	if err := loadFrom(f); err != nil {
		t.Fatal(err)
	}
	if rtLoaded.Path != wheel || !strings.HasPrefix(rtLoaded.From, "Python environment "+env["VIRTUAL_ENV"]) {
		t.Errorf("loaded %s from %q; want the wheel's %s", rtLoaded.Path, rtLoaded.From, wheel)
	}
	if n, rc := rtCount(); n != 1 || rc != cudaSuccess {
		t.Errorf("cudaGetDeviceCount through the loaded runtime: %d devices, error %d", n, rc)
	}

	// Only the too-new runtime: it is kept, and its answer is the error.
	env["VIRTUAL_ENV"] = ""
	if err := loadFrom(f); err != nil {
		t.Fatal(err)
	}
	if rtLoaded.Path != tooNew {
		t.Errorf("loaded %s; want the only runtime there is, %s", rtLoaded.Path, tooNew)
	}
	if _, rc := rtCount(); rc != cudaErrorInsufficientDriver {
		t.Errorf("cudaGetDeviceCount: error %d, want 35", rc)
	}

	// None: one line naming what was looked for and where.
	f.Root = t.TempDir()
	err := loadFrom(f)
	want := "cuda: the CUDA runtime (libcudart.so.13, libcudart.so.12, libcudart.so.11.0, libcudart.so) not found in " +
		"the system's library path, CUDA toolkits or Python environments' NVIDIA wheels (install it, name it in DISTBENCH_CUDART_LIB, or choose --device cpu)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// The stand-in's one device as gpu-check shows it, and the versions.
func TestDevices(t *testing.T) {
	t.Setenv(EnvCUDARTLib, standin(t))
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	want := DeviceInfo{Ordinal: 0, PCIBusID: "0000:00:00.0", Major: 0, Minor: 0, SMs: 1, FreeBytes: 1 << 30, TotalBytes: 1 << 30}
	if len(devs) != 1 || devs[0] != want {
		t.Errorf("Devices() = %+v, want [%+v]", devs, want)
	}
	if r, d, err := Versions(); r != 12000 || d != 12000 || err != nil {
		t.Errorf("Versions() = %d, %d, %v; want the stand-in's 12000, 12000", r, d, err)
	}
	rt, err := Runtime()
	if err != nil || rt.From != EnvCUDARTLib || !strings.HasSuffix(rt.Path, "libcudart-standin.so") {
		t.Errorf("Runtime() = %+v, %v", rt, err)
	}
}
