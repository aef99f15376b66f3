package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Reduce is a pipelined chain into the root: root+1 sends its chunks to
// root+2, which adds its own and passes them on, and so on until the root.
// Non-root ranks accumulate in a scratch copy, leaving t as it was.
func (a *algorithms) Reduce(c *core.Call, t collective.Tensor, root int, op collective.Op) error {
	n, r := c.Size(), c.Rank()
	pos := core.Mod(r-root-1, n) // root+1 is 0, root is n−1
	prev, next := core.Mod(r-1, n), core.Mod(r+1, n)
	chunk := a.chunkBytes(t.DType)
	chunks := (len(t.Data) + chunk - 1) / chunk
	acc := t.Data
	if pos != n-1 {
		acc = c.Scratch(0, len(t.Data))
		copy(acc, t.Data)
	}
	rng := func(k int) (int, int) { return k * chunk, min((k+1)*chunk, len(t.Data)) }

	if pos == 0 {
		for k := range chunks {
			lo, hi := rng(k)
			if err := c.Send(next, 0, acc[lo:hi]); err != nil {
				return err
			}
		}
		return nil
	}
	free := make(chan []byte, slots)
	for i := range slots {
		free <- c.Scratch(1+i, chunk)
	}
	type item struct {
		k    int
		slot []byte
	}
	got := make(chan item, slots)
	return c.Parallel(
		func(c *core.Call) error {
			defer close(got)
			for k := range chunks {
				lo, hi := rng(k)
				var slot []byte
				select {
				case slot = <-free:
				case <-c.Ctx().Done():
					return c.Ctx().Err()
				}
				if err := c.Recv(prev, 0, slot[:hi-lo]); err != nil {
					return err
				}
				got <- item{k, slot}
			}
			return nil
		},
		func(c *core.Call) error {
			for it := range got {
				lo, hi := rng(it.k)
				collective.ReduceInto(t.DType, op, acc[lo:hi], it.slot[:hi-lo])
				free <- it.slot
				if pos != n-1 {
					if err := c.Send(next, 0, acc[lo:hi]); err != nil {
						// Drain so the receiver is not left blocked on free.
						go func() {
							for range got {
							}
						}()
						return err
					}
				}
			}
			return nil
		})
}
