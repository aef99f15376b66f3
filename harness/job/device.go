package job

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/cuda"
)

// OnDevice reports whether the spec's buffers live in device memory.
func (s *Spec) OnDevice() bool { return s.Device != "" && s.Device != collective.CPU.String() }

// validateDevice checks the device's name, and that this machine can give
// it memory before any process starts: --device cuda without a CUDA runtime
// or GPU is one line saying which is missing.
func (s *Spec) validateDevice() error {
	if s.Device == "" {
		return nil
	}
	d, err := collective.ParseDevice(s.Device)
	if err != nil {
		return fmt.Errorf("--device: %w", err)
	}
	if d == collective.CPU {
		return nil
	}
	// The p2p-* benchmarks (OSU's) time the host's own buffers; rather
	// than record host figures as device ones, they are refused.
	for _, p := range s.Points {
		if t := collectives[p.Collective]; t.PointToPoint {
			return fmt.Errorf("--device %s: %s runs on host buffers only (accepted on a device: the collectives and sendrecv)", s.Device, p.Collective)
		}
	}
	return cuda.Available()
}
