//go:build !cgo

package telemetry

import (
	"time"

	"github.com/distbench/distbench/results"
)

// Sampler samples this host's GPUs; without cgo there is never one.
type Sampler struct{}

// Open says telemetry needs cgo.
func Open() (*Sampler, string) {
	return nil, "GPU telemetry needs cgo (go-nvml); this distbench was built without"
}

// Start starts a sample run; on a nil Sampler it does nothing.
func (s *Sampler) Start(every time.Duration) *Run { return nil }

// Close releases NVML.
func (s *Sampler) Close() {}

// Run is one point's sampling.
type Run struct{}

// Stop ends the run and summarises it: nil on a nil Run.
func (r *Run) Stop() []results.GPUStats { return nil }

// Info is what NVML says of the driver and its GPUs; without cgo, nothing.
type Info struct {
	Library, From              string
	DriverVersion, NVMLVersion string
	CUDADriverVersion          int
	GPUs                       []GPUInfo
}

// GPUInfo is one GPU as NVML numbers it.
type GPUInfo struct {
	Index                int
	Name, UUID, PCIBusID string
	MemoryBytes          uint64
}

// Describe says what NVML knows: nothing, without cgo.
func (s *Sampler) Describe() Info { return Info{} }
