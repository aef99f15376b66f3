package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// AllGather is the second half of the allreduce ring: rank r starts with its
// block in place and at step g forwards block r−g, receiving block r−g−1
// straight into out.
func (a *algorithms) AllGather(c *core.Call, out, in collective.Tensor) error {
	n, r := c.Size(), c.Rank()
	per := in.Count()
	copy(out.Slice(r*per, (r+1)*per).Data, in.Data)
	segs := make([][2]int, n)
	for i := range segs {
		segs[i] = [2]int{i * per * in.DType.Size(), (i + 1) * per * in.DType.Size()}
	}
	p := &pass{
		dt: in.DType, buf: out.Data, segs: segs,
		steps:   n - 1,
		sendSeg: func(g int) int { return core.Mod(r-g, n) },
		recvSeg: func(g int) int { return core.Mod(r-g-1, n) },
		chunk:   a.relayChunk(in.DType, segs, n),
	}
	return p.run(c)
}
