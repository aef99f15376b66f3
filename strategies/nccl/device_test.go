//go:build cgo

package nccl

import (
	"slices"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/cuda"
)

// TestConformanceOnDevice runs the suite on tensors in device memory
// (internal/cuda's cudaMalloc; the stand-in's, or a GPU's under make
// gpu-check), which the strategy hands to NCCL as they are: in place and
// out of place, groups and async calls, avg as ncclAvg. Rank r allocates on
// the device cuda.DeviceFor gives it, as the strategy places its communicator.
func TestConformanceOnDevice(t *testing.T) {
	sizes := []int{1, 2, 3, 4, 8}
	if testing.Short() {
		sizes = []int{1, 2, 3}
	}
	gpus, err := cuda.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if standin == "" {
		sizes = slices.DeleteFunc(sizes, func(n int) bool { return n > gpus })
	}
	alloc := func(rank, n int) (collective.DeviceMemory, func(), error) {
		dev, err := cuda.DeviceFor(rank)
		if err != nil {
			return nil, nil, err
		}
		return cuda.Alloc(dev, n)
	}
	collectivetest.Run(t, collectivetest.OnDevice(func(t testing.TB, n int) []collective.Comm {
		return newWorld(t, n, 0)
	}, alloc), collectivetest.Options{WorldSizes: sizes})
}
