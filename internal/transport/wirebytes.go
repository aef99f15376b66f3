// Counts of the payload bytes each rank moves (collective.WireCounter).

package transport

import (
	"sync/atomic"

	"github.com/distbench/distbench/collective"
)

var (
	_ collective.WireCounter = (*Mem)(nil)
	_ collective.WireCounter = (*TCP)(nil)
)

// wireCount is a rank's cumulative payload bytes, one atomic add per whole
// message on each side, so that counting costs nothing next to the message.
// A message is counted as sent once the kernel (or the in-memory peer) has
// taken all of it, and as received when the reader starts on its payload,
// before any receive it fills completes: an operation that has returned has
// been counted on both ends that it waited for. Headers, padding and control
// frames (heartbeats, wait queries, goodbyes, aborts) are not payload.
type wireCount struct {
	sent, recv atomic.Int64
}

func (w *wireCount) bytes() collective.WireBytes {
	return collective.WireBytes{Sent: w.sent.Load(), Recv: w.recv.Load()}
}

// WireBytes returns the payload bytes this rank has sent and received.
func (m *Mem) WireBytes() collective.WireBytes { return m.wire.bytes() }

// WireBytes returns the payload bytes this rank has sent and received over
// the mesh, data frames only.
func (t *TCP) WireBytes() collective.WireBytes { return t.wire.bytes() }
