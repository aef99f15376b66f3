package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// ReduceScatter is the first half of the allreduce ring, shifted by one so
// that rank r ends holding block r: at step g it sends block r−g−1 and
// receives block r−g−2. It works on a copy of in, which it leaves unchanged
// (except block r when out is that block, the in-place form).
func (a *algorithms) ReduceScatter(c *core.Call, out, in collective.Tensor, op collective.Op) error {
	n, r := c.Size(), c.Rank()
	per := out.Count()
	work := c.Scratch(0, len(in.Data))
	copy(work, in.Data)
	segs := make([][2]int, n)
	for i := range segs {
		segs[i] = [2]int{i * per * in.DType.Size(), (i + 1) * per * in.DType.Size()}
	}
	p := &pass{
		dt: in.DType, op: op, buf: work, segs: segs,
		steps:       n - 1,
		reduceSteps: n - 1,
		sendSeg:     func(g int) int { return core.Mod(r-g-1, n) },
		recvSeg:     func(g int) int { return core.Mod(r-g-2, n) },
		chunk:       a.relayChunk(in.DType, segs, n),
	}
	if err := p.run(c); err != nil {
		return err
	}
	copy(out.Data, work[segs[r][0]:segs[r][1]])
	return nil
}
