package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Reduce is AllReduce in which only the root pulls.
func (a *algorithms) Reduce(c *core.Call, t collective.Tensor, root int, op collective.Op) error {
	p := plan{
		name: "reduce", dt: t.DType, op: op, count: t.Count(),
		contrib: c.Size(), pullers: 1,
		push: []region{{0, t.Data}},
	}
	if c.Rank() == root {
		p.pull = []region{{0, t.Data}}
	}
	return a.run(c, p)
}
