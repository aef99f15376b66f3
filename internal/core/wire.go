package core

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

var _ collective.WireCounter = (*Group)(nil)

// WireBytes is what the job's transport has sent and received, when it
// counts (driver.WireCounter); zero otherwise. Every group of the job
// shares the transport, and so the counts.
func (g *Group) WireBytes() collective.WireBytes {
	wc, ok := g.shared.tr.(driver.WireCounter)
	if !ok {
		return collective.WireBytes{}
	}
	sent, recv := wc.WireBytes()
	return collective.WireBytes{Sent: sent, Recv: recv}
}
