package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Gather is AllGather in which only the root pulls.
func (a *algorithms) Gather(c *core.Call, out, in collective.Tensor, root int) error {
	p := plan{
		name: "gather", dt: in.DType, count: c.Size() * in.Count(),
		contrib: 1, pullers: 1,
		push: []region{block(in.DType, in.Count(), c.Rank(), in.Data)},
	}
	if c.Rank() == root {
		p.pull = []region{{0, out.Data}}
	}
	return a.run(c, p)
}
