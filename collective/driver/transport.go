package driver

import (
	"context"
	"net"
)

// Transport moves tagged messages between the ranks of one job. Messages from
// one source with one tag are delivered in the order sent. It is what
// strategies see of the network: no sockets, no addresses beyond PeerAddr.
// Every transport posts receives (Poster, ReducePoster): the engine's
// pipelined schedules post each receive before the send it answers, and
// have no other way to receive.
type Transport interface {
	Poster
	ReducePoster
	Rank() int
	Size() int
	// Send writes data to peer under tag. It may return before the peer has
	// received it; data may be reused once it returns.
	Send(ctx context.Context, peer int, tag uint64, data []byte) error
	// Recv fills buf with the next message from peer under tag. A message of
	// another size is a *collective.MismatchError.
	Recv(ctx context.Context, peer int, tag uint64, buf []byte) error
	// PeerAddr is the peer's host:port, for error messages.
	PeerAddr(peer int) string
	// Abort tells every peer that this job has failed with err, so that
	// their pending operations fail now rather than at their deadline, and
	// closes the transport.
	Abort(err error)
	Close() error
}

// Poster is the part of Transport that posts receives ahead of
// their messages and completed later, so that a pipelined algorithm can keep
// several in flight and have each land in place, with no copy.
type Poster interface {
	PostRecv(peer int, tag uint64, buf []byte) (Posted, error)
}

// ReducePoster is the part of Transport that posts a receive that
// reduces the message into buf (buf = buf op message) as it arrives, a few
// kilobytes at a time straight from the connection's read buffer, instead
// of landing it in a staging buffer that is reduced afterwards. It saves a
// pass over memory and the staging buffer itself; a reduction step of a
// ring or a chain then costs what a copy step costs.
type ReducePoster interface {
	PostRecvReduce(peer int, tag uint64, buf []byte, red Reduction) (Posted, error)
}

// Reduction is how a reducing receive combines a message into its buffer.
// The engine builds it from the operation's dtype and op; a transport only
// calls Into, on whole elements.
type Reduction struct {
	// Elem is the size of one element in bytes: a transport reduces a
	// message in pieces that are multiples of it.
	Elem int
	// Into computes dst = dst op src element-wise; len(dst) == len(src).
	Into func(dst, src []byte)
}

// Posted is a receive made by Poster.PostRecv or ReducePoster.PostRecvReduce.
type Posted interface {
	// Wait returns once the message has been received into the buffer, or
	// ctx has ended; buf is never written after Wait returns.
	Wait(ctx context.Context) error
	// Done returns a channel that is closed once the receive has
	// completed, so that one goroutine can wait for whichever of several
	// receives completes first; Wait then returns its result at once. A
	// caller asks for Done when it is about to block on it: a wait query
	// (Diagnoser) reports the receive as waited for from then on.
	Done() <-chan struct{}
}

// ConnShaper is an optional Transport interface: a transport whose links are
// shaped to a network (rate, latency) shapes a strategy's own connections
// too (a parameter server's gRPC streams), so that they share the process's
// NIC instead of bypassing it.
type ConnShaper interface {
	ShapeConn(c net.Conn) net.Conn
}

// A Transport that counts the payload bytes it moves implements
// collective.WireCounter, the interface a Comm implements for the same
// counts: payload bytes are the data of messages (Send, and every kind of
// receive alike); frame headers, padding, heartbeats, wait queries and
// other control frames are not counted. The counts only grow; callers take
// differences. The strategies' communicators report their transport's.

// Topology is an optional Transport interface: which ranks share a host.
// Ranks on one host share its memory and its NIC, so a transport may carry
// their messages through shared memory, and a hierarchical algorithm
// reduces within each host before anything crosses the network.
type Topology interface {
	// HostOf names rank's host: ranks with equal names share a host. It is
	// "" for a rank out of range, and every rank's name is "" when the
	// transport does not know (then no two ranks may be taken to share one).
	HostOf(rank int) string
}
