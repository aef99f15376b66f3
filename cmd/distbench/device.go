package main

import (
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/internal/cuda"
)

// devicesAvailable is one line saying why a plan's device points cannot
// run here (no CUDA runtime, driver or GPU), before any launch starts; a
// sweep on the host alone never asks.
func devicesAvailable(exp *plan.Expanded) error {
	for _, g := range exp.Groups {
		if g.Spec != nil && g.Spec.OnDevice() {
			return cuda.Available()
		}
	}
	return nil
}
