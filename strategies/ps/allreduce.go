package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// AllReduce is push + pull: every worker pushes its pieces of t to the
// servers holding them, each server reduces the pushes of a chunk into its
// accumulator as they arrive, and every worker pulls the reduced pieces back
// into t, chunk by chunk as they complete. A chunk is pulled into t only
// after this worker's own push of it has arrived, so t is safe to overwrite.
func (a *algorithms) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	return a.run(c, plan{
		name: "allreduce", dt: t.DType, op: op, count: t.Count(),
		contrib: c.Size(), pullers: c.Size(),
		push:    []region{{0, t.Data}},
		pull:    []region{{0, t.Data}},
		inPlace: true,
	})
}
