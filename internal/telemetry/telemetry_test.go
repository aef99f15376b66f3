//go:build cgo

package telemetry

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fullGPU is a mock GPU that reports every quantity; its NVLink counters
// grow by 1 MiB at each reading.
func fullGPU() *mock.Device {
	var kib atomic.Uint64
	return &mock.Device{
		GetNameFunc:             func() (string, nvml.Return) { return "Mock H100", nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 80, Memory: 30}, nvml.SUCCESS },
		GetMemoryInfoFunc:       func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 80 << 30, Used: 3 << 30}, nvml.SUCCESS },
		GetPowerUsageFunc:       func() (uint32, nvml.Return) { return 250_000, nvml.SUCCESS }, // mW
		GetClockInfoFunc: func(c nvml.ClockType) (uint32, nvml.Return) {
			if c != nvml.CLOCK_SM {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return 1980, nvml.SUCCESS
		},
		GetPcieThroughputFunc: func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
			if c == nvml.PCIE_UTIL_TX_BYTES {
				return 2000, nvml.SUCCESS // KB/s
			}
			return 3000, nvml.SUCCESS
		},
		GetFieldValuesFunc: func(fv []nvml.FieldValue) nvml.Return {
			v := kib.Add(1024)
			for i := range fv {
				if fv[i].ScopeId != 0xFFFFFFFF {
					return nvml.ERROR_INVALID_ARGUMENT
				}
				fv[i].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				fv[i].NvmlReturn = uint32(nvml.SUCCESS)
				binary.LittleEndian.PutUint64(fv[i].Value[:], v)
			}
			return nvml.SUCCESS
		},
	}
}

// oldGPU has no power reading and no NVLink, as a PCIe card of an old
// driver.
func oldGPU() *mock.Device {
	d := fullGPU()
	d.GetNameFunc = func() (string, nvml.Return) { return "Mock T4", nvml.SUCCESS }
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
		for i := range fv {
			fv[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
		}
		return nvml.SUCCESS
	}
	return d
}

func lib(init nvml.Return, devs ...nvml.Device) *mock.Interface {
	return &mock.Interface{
		InitFunc:     func() nvml.Return { return init },
		ShutdownFunc: func() nvml.Return { return nvml.SUCCESS },
		ErrorStringFunc: func(r nvml.Return) string {
			return map[nvml.Return]string{nvml.ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded"}[r]
		},
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
	}
}

func TestSample(t *testing.T) {
	s, why := OpenLib(lib(nvml.SUCCESS, fullGPU(), oldGPU()))
	if s == nil {
		t.Fatalf("no sampler: %s", why)
	}
	defer s.Close()
	r := s.Start(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	got := r.Stop()
	if again := r.Stop(); len(again) != len(got) || again[0].Samples != got[0].Samples {
		t.Errorf("a second Stop gave %+v, the first %+v", again, got)
	}
	if len(got) != 2 {
		t.Fatalf("%d GPUs, want 2", len(got))
	}
	h, o := got[0], got[1]
	if h.Name != "Mock H100" || h.Index != 0 || h.Samples < 2 {
		t.Errorf("GPU 0: %+v", h)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"utilisation", h.UtilPct, 80}, {"utilisation max", h.UtilPctMax, 80},
		{"memory used", float64(h.MemUsedBytes), 3 << 30},
		{"power", h.PowerW, 250}, {"SM clock", h.SMClockMHz, 1980},
		{"PCIe TX", h.PCIeTxBps, 2e6}, {"PCIe RX", h.PCIeRxBps, 3e6},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if h.NVLinkTxBps <= 0 || h.NVLinkRxBps <= 0 || len(h.Unsupported) != 0 {
		t.Errorf("GPU 0's NVLink %v/%v B/s, unsupported %v", h.NVLinkTxBps, h.NVLinkRxBps, h.Unsupported)
	}
	if want := []string{"power", "NVLink"}; !slices.Equal(o.Unsupported, want) || o.PowerW != 0 || o.NVLinkTxBps != 0 || o.UtilPct != 80 {
		t.Errorf("GPU 1: %+v; want unsupported %v and the rest", o, want)
	}
}

// No driver, no GPU, or a library go-nvml cannot bind: no sampler, a
// reason, no error, and a nil sampler that does nothing.
func TestNoTelemetry(t *testing.T) {
	tests := []struct {
		name string
		lib  nvml.Interface
		why  string
	}{
		{"no driver", lib(nvml.ERROR_DRIVER_NOT_LOADED), "NVML: Driver Not Loaded (9)"},
		{"no GPU", lib(nvml.SUCCESS), "NVML: no GPU"},
		{"library panics", &mock.Interface{}, "NVML: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, why := OpenLib(tc.lib)
			if s != nil || !strings.HasPrefix(why, tc.why) {
				t.Fatalf("OpenLib = %v, %q; want nil and %q", s, why, tc.why)
			}
			r := s.Start(time.Millisecond)
			if got := r.Stop(); got != nil {
				t.Errorf("nil sampler sampled %v", got)
			}
			s.Close()
		})
	}
}

// Debian's libnvidia-ml1 (non-free) on a machine without the NVIDIA
// driver: no telemetry, no error. With a driver (make gpu-check), a real
// sample of every GPU.
func TestRealNVML(t *testing.T) {
	s, why := Open()
	if s != nil {
		defer s.Close()
		for _, g := range s.Start(10 * time.Millisecond).Stop() {
			t.Logf("%+v", g)
			if g.Samples < 2 || g.Name == "" || slices.Contains(g.Unsupported, "utilisation") {
				t.Errorf("GPU %d: %+v", g.Index, g)
			}
		}
		return
	}
	t.Log(why)
	if strings.Contains(why, "Library Not Found") || strings.Contains(why, "(12)") {
		t.Skipf("no libnvidia-ml here (apt-get install libnvidia-ml1 from Debian's non-free): %s", why)
	}
	if !strings.Contains(why, "Driver Not Loaded") {
		t.Errorf("why = %q, want NVML's Driver Not Loaded", why)
	}
}
