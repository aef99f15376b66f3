package driver

import (
	"context"
	"time"
)

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
	// was aborted meanwhile (collective.ErrAborted). Peer is then -1.
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
