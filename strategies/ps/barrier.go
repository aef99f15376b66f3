package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Barrier is an allreduce of one byte on one server (which one rotates with
// the sequence number): nobody's pull completes before everybody's push.
func (a *algorithms) Barrier(c *core.Call) error {
	b := c.Scratch(0, 1)
	return a.run(c, plan{
		name: "barrier", dt: collective.Uint8, op: collective.Max, count: 1,
		contrib: c.Size(), pullers: c.Size(),
		push: []region{{0, b}},
		pull: []region{{0, b}},
	})
}
