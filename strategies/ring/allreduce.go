package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// AllReduce runs the reduce-scatter and all-gather halves as one pipelined
// pass of 2(n−1) steps: at step g rank r sends segment r−g and receives
// segment r−g−1; after step n−2 it holds segment r+1 fully reduced, and the
// all-gather steps carry every reduced segment once around the ring.
func (a *algorithms) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	n, r := c.Size(), c.Rank()
	segs := segments(t.DType, t.Count(), n)
	p := &pass{
		dt: t.DType, op: op, buf: t.Data,
		segs:        segs,
		steps:       2 * (n - 1),
		reduceSteps: n - 1,
		sendSeg:     func(g int) int { return core.Mod(r-g, n) },
		recvSeg:     func(g int) int { return core.Mod(r-g-1, n) },
		chunk:       a.chunkBytes(t.DType, largest(segs)),
	}
	return p.run(c)
}
