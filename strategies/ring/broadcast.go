package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Broadcast is a pipelined chain root → root+1 → … → root−1: each rank
// receives chunk k straight into t and forwards it while receiving chunk k+1,
// so the time is about (size + (n−2)·chunk) / bandwidth rather than
// (n−1)·size / bandwidth.
func (a *algorithms) Broadcast(c *core.Call, t collective.Tensor, root int) error {
	n, r := c.Size(), c.Rank()
	pos := core.Mod(r-root, n)
	prev, next := core.Mod(r-1, n), core.Mod(r+1, n)
	chunk := a.chunkBytes(t.DType)
	chunks := (len(t.Data) + chunk - 1) / chunk
	rng := func(k int) []byte { return t.Data[k*chunk : min((k+1)*chunk, len(t.Data))] }

	if pos == 0 {
		for k := range chunks {
			if err := c.Send(next, 0, rng(k)); err != nil {
				return err
			}
		}
		return nil
	}
	if pos == n-1 { // the chain's end only receives
		for k := range chunks {
			if err := c.Recv(prev, 0, rng(k)); err != nil {
				return err
			}
		}
		return nil
	}
	got := make(chan int, chunks)
	return c.Parallel(
		func(c *core.Call) error {
			defer close(got)
			for k := range chunks {
				if err := c.Recv(prev, 0, rng(k)); err != nil {
					return err
				}
				got <- k
			}
			return nil
		},
		func(c *core.Call) error {
			for k := range got {
				if err := c.Send(next, 0, rng(k)); err != nil {
					return err
				}
			}
			return nil
		})
}
