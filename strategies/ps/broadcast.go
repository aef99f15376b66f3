package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Broadcast has the root push t to the servers, which stream it to every
// other worker's pull chunk by chunk as it arrives.
func (a *algorithms) Broadcast(c *core.Call, t collective.Tensor, root int) error {
	p := plan{
		name: "broadcast", dt: t.DType, count: t.Count(),
		contrib: 1, pullers: c.Size() - 1,
	}
	if c.Rank() == root {
		p.push = []region{{0, t.Data}}
	} else {
		p.pull = []region{{0, t.Data}}
	}
	return a.run(c, p)
}
