//go:build cgo

package telemetry

import (
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Describe, for gpu-check: the driver's and NVML's versions, and each GPU
// with its bus id in the CUDA runtime's form; what NVML cannot say stays
// empty.
func TestDescribe(t *testing.T) {
	h100 := fullGPU()
	h100.GetUUIDFunc = func() (string, nvml.Return) { return "GPU-1234", nvml.SUCCESS }
	h100.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		for i, c := range "00000000:3B:00.0" {
			p.BusId[i] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	old := oldGPU()
	old.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
	old.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED }
	l := lib(nvml.SUCCESS, h100, old)
	l.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "580.159.04", nvml.SUCCESS }
	l.SystemGetNVMLVersionFunc = func() (string, nvml.Return) { return "13.580.159.04", nvml.SUCCESS }
	l.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 13000, nvml.SUCCESS }
	s, why := OpenLib(l)
	if s == nil {
		t.Fatal(why)
	}
	defer s.Close()
	want := Info{DriverVersion: "580.159.04", NVMLVersion: "13.580.159.04", CUDADriverVersion: 13000, GPUs: []GPUInfo{
		{Index: 0, Name: "Mock H100", UUID: "GPU-1234", PCIBusID: "0000:3B:00.0", MemoryBytes: 80 << 30},
		{Index: 1, Name: "Mock T4", MemoryBytes: 80 << 30},
	}}
	if got := s.Describe(); !reflect.DeepEqual(got, want) {
		t.Errorf("Describe() = %+v\nwant %+v", got, want)
	}
	if got := (*Sampler)(nil).Describe(); !reflect.DeepEqual(got, Info{}) {
		t.Errorf("nil sampler: %+v", got)
	}
}
