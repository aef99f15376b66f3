package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// AllGather places every worker's in at its block of a virtual tensor the
// size of out, on the servers, and every worker pulls all of it. In place
// (in is out's block) is safe: a chunk is pulled only once this worker's
// part of it has arrived, and it comes back unchanged.
func (a *algorithms) AllGather(c *core.Call, out, in collective.Tensor) error {
	return a.run(c, plan{
		name: "allgather", dt: in.DType, count: out.Count(),
		contrib: 1, pullers: c.Size(),
		push: []region{block(in.DType, in.Count(), c.Rank(), in.Data)},
		pull: []region{{0, out.Data}},
	})
}
