package collective

import (
	"context"
	"fmt"
	"net"
	"time"
)

// DefaultTimeout bounds every operation unless Config.Timeout says otherwise.
const DefaultTimeout = 5 * time.Minute

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
	// another size is a *MismatchError.
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
	PostRecvReduce(peer int, tag uint64, buf []byte, dt DType, op Op) (Posted, error)
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

// Diagnoser is an optional Transport interface that explains a timeout.
// When this rank has waited in vain for peer, Diagnose asks peer what it is
// itself blocked on, then asks the rank it names, and so on along the chain
// of waits, until a rank that waits for nothing (busy or stuck outside
// communication, or not yet in the operation), a rank already asked (a
// cycle: a deadlock, or ranks that disagree on the order of operations), or
// one that does not answer by ctx's deadline (stopped, or its process
// stuck). Each rank's transport answers for it, even while the rank itself
// is busy. Diagnose returns what each rank asked answered, in order, and
// returns by ctx's deadline.
type Diagnoser interface {
	Diagnose(ctx context.Context, peer int) []WaitState
}

// WaitState is one rank's answer in a diagnosis (see Diagnoser): what it was
// blocked on when asked.
type WaitState struct {
	Rank int    // the rank asked
	Addr string // its host:port, or "" where there is none
	// Err is why there is no answer: ctx's deadline passed (it wraps
	// context.DeadlineExceeded), the link to the rank failed, or the job
	// was aborted meanwhile (ErrAborted). Peer is then -1.
	Err error
	// Peer is the rank it is blocked on, or -1 if it is blocked on none:
	// waiting for a message from Peer under Tag, or, when Send, for Peer to
	// take one.
	Peer int
	Send bool
	Tag  uint64
	For  time.Duration // how long it had been blocked
	// TimedOut: that wait reached its deadline; the rank is failing
	// because of it.
	TimedOut bool
}

// ConnShaper is an optional Transport interface: a transport whose links are
// shaped to a network (rate, latency) shapes a strategy's own connections
// too (a parameter server's gRPC streams), so that they share the process's
// NIC instead of bypassing it.
type ConnShaper interface {
	ShapeConn(c net.Conn) net.Conn
}

// Store is the rendezvous key-value store the ranks of one job share.
type Store interface {
	Set(ctx context.Context, key string, value []byte) error
	// Get waits until key exists, then returns its value.
	Get(ctx context.Context, key string) ([]byte, error)
	// Add adds delta to the integer at key (0 if absent) and returns the sum.
	Add(ctx context.Context, key string, delta int64) (int64, error)
	// Wait returns once every key exists.
	Wait(ctx context.Context, keys ...string) error
	Close() error
}

// Config is what a strategy needs to build a communicator.
type Config struct {
	Rank int
	Size int
	// Transport connects this rank to every other; required when Size > 1.
	Transport Transport
	// Store is the job's rendezvous store; strategies that place extra
	// processes (a parameter server's) use it. May be nil otherwise.
	Store Store
	// Timeout bounds each operation; 0 means DefaultTimeout.
	Timeout time.Duration
	// Options are strategy-specific settings, such as "algo": "dbtree".
	Options map[string]string
	// JobID and Token are the job's identity and shared secret, as the
	// transport has them, for connections a strategy opens itself (a
	// parameter server's): a peer that cannot prove it holds Token is
	// refused before it can send anything.
	JobID string
	Token []byte
	// Logf, if set, receives diagnostic lines.
	Logf func(format string, args ...any)
}

// Validate checks the configuration before any network is touched.
func (c *Config) Validate() error {
	switch {
	case c.Size < 1:
		return fmt.Errorf("collective: world size %d: must be at least 1", c.Size)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("collective: rank %d out of range for world size %d (accepted: 0..%d)", c.Rank, c.Size, c.Size-1)
	case c.Size > 1 && c.Transport == nil:
		return fmt.Errorf("collective: world size %d needs a transport", c.Size)
	case c.Transport != nil && (c.Transport.Rank() != c.Rank || c.Transport.Size() != c.Size):
		return fmt.Errorf("collective: transport is rank %d of %d, config says rank %d of %d",
			c.Transport.Rank(), c.Transport.Size(), c.Rank, c.Size)
	case c.Timeout < 0:
		return fmt.Errorf("collective: negative timeout %v", c.Timeout)
	}
	return nil
}

// OpTimeout is the effective per-operation timeout.
func (c *Config) OpTimeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}
