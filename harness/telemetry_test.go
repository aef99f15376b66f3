//go:build cgo

package harness

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/telemetry"
)

// Each point's record carries what rank 0 sampled of its GPUs during the
// timed iterations (here go-nvml's mock, a GPU at 55% and 120 W).
func TestMeasureTelemetry(t *testing.T) {
	gpu := &mock.Device{
		GetNameFunc:             func() (string, nvml.Return) { return "Mock GPU", nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 55}, nvml.SUCCESS },
		GetMemoryInfoFunc:       func() (nvml.Memory, nvml.Return) { return nvml.Memory{Used: 1 << 30}, nvml.SUCCESS },
		GetPowerUsageFunc:       func() (uint32, nvml.Return) { return 120_000, nvml.SUCCESS },
		GetClockInfoFunc:        func(nvml.ClockType) (uint32, nvml.Return) { return 1500, nvml.SUCCESS },
		GetPcieThroughputFunc:   func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED },
		GetFieldValuesFunc:      func([]nvml.FieldValue) nvml.Return { return nvml.ERROR_NOT_SUPPORTED },
	}
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return gpu, nvml.SUCCESS },
	}
	old := openTelemetry
	openTelemetry = func() (*telemetry.Sampler, string) { return telemetry.OpenLib(lib) }
	defer func() { openTelemetry = old }()
	spec := &job.Spec{Strategy: "ring", NP: 2, Timeout: time.Minute, Iters: 3, Warmup: 1, Check: true}
	spec.Points = []job.Point{{Collective: "allreduce", Bytes: 4096, DType: "float32", Op: "sum", InPlace: true}}
	recs := measureInProcess(t, spec)
	if len(recs) != 1 || len(recs[0].GPU) != 1 {
		t.Fatalf("records %+v: want one with one GPU's telemetry", recs)
	}
	g := recs[0].GPU[0]
	if g.Name != "Mock GPU" || g.UtilPct != 55 || g.PowerW != 120 || g.Samples < 2 || len(g.Unsupported) != 3 {
		t.Errorf("telemetry %+v", g)
	}
}
