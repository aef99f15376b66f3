// Counts of the payload bytes a worker's process moves over gRPC, for
// collective.WireCounter.

package ps

import (
	"sync/atomic"

	"github.com/distbench/distbench/collective"
)

var _ collective.WireCounter = (*comm)(nil)

// wireCount is payload bytes sent and received over gRPC streams: piece
// data only, no frame headers, requests, acknowledgements or HTTP/2
// framing. Each RPC adds once, when it has moved all its pieces and
// before the caller on the other end can see it complete, so that a
// worker's operation that has returned has been counted on the servers it
// used too. In-process calls to a colocated server move nothing over the
// network and are not counted.
type wireCount struct {
	sent, recv atomic.Int64
}

// WireBytes is the transport's counts (core), which over the mesh
// include the servers' data, plus, over gRPC, this process's gRPC
// traffic: the worker's pushes and pulls to other servers, and, with a
// colocated server, what that server received from other workers' pushes
// and sent for their pulls. With dedicated servers, Servers is each
// server's traffic with this worker, as this worker counted it (over
// either transport).
func (c *comm) WireBytes() collective.WireBytes {
	b := c.Group.WireBytes() // over the mesh, the servers' traffic is in it
	if c.w.tr == nil {
		for _, sc := range c.w.conns {
			b.Sent += sc.wire.sent.Load()
			b.Recv += sc.wire.recv.Load()
		}
		if s := c.w.local; s != nil {
			b.Sent += s.wire.sent.Load()
			b.Recv += s.wire.recv.Load()
		}
	}
	if c.w.o.placement == dedicated {
		b.Servers = make([]collective.WireBytes, len(c.w.conns))
		for i, sc := range c.w.conns {
			b.Servers[i] = collective.WireBytes{Sent: sc.wire.recv.Load(), Recv: sc.wire.sent.Load()}
		}
	}
	return b
}

// piecesLen is the payload bytes of a push.
func piecesLen(pieces []piece) int64 {
	n := 0
	for _, p := range pieces {
		n += len(p.data)
	}
	return int64(n)
}
