package gpucheck

import (
	"bytes"
	"flag"
	"testing"

	"github.com/distbench/distbench/internal/cuda"
	"github.com/distbench/distbench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The text for people, from reports made here: one as the GPU machines
// lent to this project should print it (H100, driver 580.159.04, CUDA 13
// and NCCL from the torch venv's wheels: the paths and versions KINDS.md
// and the wheels' layout give, not yet a reading), and one of a machine
// with nothing.
func TestWriteText(t *testing.T) {
	venv := "/opt/torch/.venv/lib/python3.12/site-packages/nvidia"
	tests := []struct {
		name string
		r    *Report
	}{
		{"h100", &Report{
			Runtime:       Lib{Name: "the CUDA runtime", Path: venv + "/cu13/lib/libcudart.so.13", From: "Python environment /opt/torch/.venv (NVIDIA's wheel)", Version: "13.0"},
			Driver:        Lib{Name: "the CUDA driver", Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", From: "the system's library path", Version: "13.0"},
			NCCL:          Lib{Name: "NCCL", Path: venv + "/nccl/lib/libnccl.so.2", From: "Python environment /opt/torch/.venv (NVIDIA's wheel)", Version: "2.27.7"},
			NVML:          Lib{Name: "NVML", Path: "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", From: "the system's library path", Version: "13.580.159.04"},
			DriverVersion: "580.159.04",
			GPUs: []GPU{{Ordinal: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-00000000-0000-0000-0000-000000000000", PCIBusID: "0000:00:05.0",
				Compute: "9.0", SMs: 132, FreeBytes: 84_540_784_640, TotalBytes: 85_520_809_984}},
			Placement: &cuda.Placement{Ordinal: 0, Local: 0, From: "LOCAL_RANK"},
		}},
		{"none", &Report{
			Runtime: Lib{Name: "the CUDA runtime", Err: "cuda: the CUDA runtime (libcudart.so.13, libcudart.so.12, libcudart.so.11.0, libcudart.so) not found in the system's library path, CUDA toolkits or Python environments' NVIDIA wheels (install it, name it in DISTBENCH_CUDART_LIB, or choose --device cpu)"},
			Driver:  Lib{Name: "the CUDA driver"},
			NCCL:    Lib{Name: "NCCL", Err: "nccl: NCCL (libnccl.so.2) not found in the system's library path, CUDA toolkits or Python environments' NVIDIA wheels"},
			NVML:    Lib{Name: "NVML", Err: "telemetry: NVML: libnvidia-ml.so.1 not found in the system's library path or the driver's directories (sweeps run without GPU telemetry)"},
			Problems: []string{
				"cuda: the CUDA runtime (libcudart.so.13, libcudart.so.12, libcudart.so.11.0, libcudart.so) not found in the system's library path, CUDA toolkits or Python environments' NVIDIA wheels (install it, name it in DISTBENCH_CUDART_LIB, or choose --device cpu)",
				"nccl: NCCL (libnccl.so.2) not found in the system's library path, CUDA toolkits or Python environments' NVIDIA wheels",
				"telemetry: NVML: libnvidia-ml.so.1 not found in the system's library path or the driver's directories (sweeps run without GPU telemetry)",
			},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/"+tc.name+".txt", b.Bytes(), *update)
		})
	}
}

func TestVersions(t *testing.T) {
	for code, want := range map[int]string{22703: "2.27.3", 21800: "2.18.0", 2804: "2.8.4", 0: ""} {
		if got := ncclVersion(code); got != want {
			t.Errorf("ncclVersion(%d) = %q, want %q", code, got, want)
		}
	}
	for code, want := range map[int]string{13000: "13.0", 12040: "12.4", 11080: "11.8", -1: ""} {
		if got := cudaVersion(code); got != want {
			t.Errorf("cudaVersion(%d) = %q, want %q", code, got, want)
		}
	}
}
