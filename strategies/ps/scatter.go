package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Scatter has the root push in to the servers and every worker, the root
// included, pull its block.
func (a *algorithms) Scatter(c *core.Call, out, in collective.Tensor, root int) error {
	p := plan{
		name: "scatter", dt: out.DType, count: c.Size() * out.Count(),
		contrib: 1, pullers: 1,
		pull: []region{block(out.DType, out.Count(), c.Rank(), out.Data)},
	}
	if c.Rank() == root {
		p.push = []region{{0, in.Data}}
	}
	return a.run(c, p)
}
