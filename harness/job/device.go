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
	if d == collective.CUDA {
		return cuda.Available()
	}
	return nil
}
