package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/transport"
)

// seen records what the engine handed an allreduce.
type seen struct {
	core.Simple
	native bool
	mu     sync.Mutex
	onDev  bool
	op     collective.Op
}

func (s *seen) DeviceNative() bool { return s.native }

func (s *seen) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	s.mu.Lock()
	s.onDev, s.op = t.Mem != nil, op
	s.mu.Unlock()
	if t.Mem == nil {
		return s.Simple.AllReduce(c, t, op)
	}
	return nil
}

// Device tensors reach DeviceNative algorithms as they are, with Avg left
// to them; other algorithms get host copies in pinned memory, Avg as a sum
// the engine divides, and the result back on the device.
func TestDeviceStaging(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run(map[bool]string{false: "staged", true: "native"}[native], func(t *testing.T) {
			var dev collectivetest.FakeDevice
			trs := transport.NewMemWorld(2, transport.MemOptions{})
			algos := []*seen{{native: native}, {native: native}}
			comms := make([]*core.Group, 2)
			for r := range 2 {
				g, err := core.New("test", collective.Config{Rank: r, Size: 2, Transport: trs[r]}, func(*core.Group) (core.Algorithms, error) { return algos[r], nil })
				if err != nil {
					t.Fatal(err)
				}
				comms[r] = g
			}
			errs := make([]error, 2)
			results := make([][]float32, 2)
			var wg sync.WaitGroup
			for r := range 2 {
				wg.Go(func() {
					mem, _, _ := dev.Alloc(r, 16)
					if err := mem.FromHost(collective.FromFloat32([]float32{1, 2, 3, float32(r)}).Data); err != nil {
						errs[r] = err
						return
					}
					if err := comms[r].AllReduce(context.Background(), collective.DeviceTensor(collective.Float32, mem), collective.Avg); err != nil {
						errs[r] = err
						return
					}
					got := make([]float32, 4)
					errs[r] = mem.ToHost(collective.FromFloat32(got).Data)
					results[r] = got
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for r, a := range algos {
				wantOp := collective.Sum
				if native {
					wantOp = collective.Avg
				}
				if a.onDev != native || a.op != wantOp {
					t.Errorf("rank %d's algorithms got a device tensor %v and op %v; want %v and %v", r, a.onDev, a.op, native, wantOp)
				}
				if !native && (results[r][0] != 1 || results[r][3] != 0.5) {
					t.Errorf("rank %d: staged result %v, want [1 2 3 0.5]", r, results[r])
				}
			}
			for _, c := range comms {
				c.Close()
			}
			if !native && (dev.PinnedAllocs == 0 || dev.PinnedLive != 0) {
				t.Errorf("%d pinned buffers allocated, %d left after close", dev.PinnedAllocs, dev.PinnedLive)
			}
		})
	}
}
