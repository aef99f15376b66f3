package core

import "github.com/distbench/distbench/collective"

var _ collective.WireCounter = (*Group)(nil)

// WireBytes is what the job's transport has sent and received, when it
// counts (a transport may implement collective.WireCounter, as a Comm
// may); zero otherwise. Every group of the job shares the transport, and so
// the counts.
func (g *Group) WireBytes() collective.WireBytes {
	wc, ok := g.shared.tr.(collective.WireCounter)
	if !ok {
		return collective.WireBytes{}
	}
	return wc.WireBytes()
}
