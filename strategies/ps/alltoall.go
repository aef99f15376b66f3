package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// AllToAll goes through the servers as a transpose: the virtual tensor is
// every worker's out, in rank order, and worker r pushes its block j to
// block r of worker j's out, then pulls its own. In place, in is copied
// first: this worker's out blocks may arrive before its in blocks have left.
func (a *algorithms) AllToAll(c *core.Call, out, in collective.Tensor) error {
	n, r := c.Size(), c.Rank()
	per := in.Count() / n
	if core.Overlap(out.Data, in.Data) {
		src := c.Scratch(0, len(in.Data))
		copy(src, in.Data)
		in = collective.Tensor{DType: in.DType, Data: src}
	}
	p := plan{
		name: "alltoall", dt: in.DType, count: n * in.Count(),
		contrib: 1, pullers: 1,
		pull: []region{block(out.DType, out.Count(), r, out.Data)},
	}
	for j := range n {
		p.push = append(p.push, block(in.DType, per, j*n+r, in.Slice(j*per, (j+1)*per).Data))
	}
	return a.run(c, p)
}
