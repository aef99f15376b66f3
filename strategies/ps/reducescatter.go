package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// ReduceScatter is AllReduce of in in which each worker pulls only its
// block. In place (out is in's block) is safe, as for AllReduce.
func (a *algorithms) ReduceScatter(c *core.Call, out, in collective.Tensor, op collective.Op) error {
	return a.run(c, plan{
		name: "reducescatter", dt: in.DType, op: op, count: in.Count(),
		contrib: c.Size(), pullers: 1,
		push: []region{{0, in.Data}},
		pull: []region{block(out.DType, out.Count(), c.Rank(), out.Data)},
	})
}
