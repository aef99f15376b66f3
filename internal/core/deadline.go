package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// opCtx is an operation's context: context.WithTimeout's meaning (the
// parent's values and cancellation, and a deadline), without its cost on
// the path where nothing waits. A timerCtx arms a runtime timer when it is
// made and stops it when the operation ends; at 4 KiB over shared memory
// that, and the scheduler's timer checks it causes, were a tenth of an
// allreduce. Here the deadline is a time: waits that poll (a spinning
// receive, a send that finds room) compare it with clocks they read anyway,
// and only when something asks for Done, that is, when a wait is about to
// park, is the real thing made: context.WithDeadline(parent, deadline),
// whose Done, Err and Value (so that children made with context.WithCancel
// hang on it directly) this context then passes on. A parked wait thus
// costs what it did with context.WithTimeout, and one that never parks
// costs no timer. Err reads the clock, so a loop that polls only Err still
// ends at the deadline.
//
// Done, Err and Deadline keep the context contract: once Err is non-nil,
// Done is closed (or, if never asked for, made closed), and Err does not
// change again.
type opCtx struct {
	parent   context.Context
	deadline time.Time

	done atomic.Pointer[<-chan struct{}] // Done's, once asked for
	real atomic.Pointer[context.Context] // made by Done
	mu   sync.Mutex
	stop context.CancelFunc // real's
	err  error              // how it ended before real was made
}

// newOpCtx returns the context of an operation that must end within
// timeout, and its cancel function.
func newOpCtx(parent context.Context, timeout time.Duration) (*opCtx, func()) {
	c := &opCtx{}
	c.init(parent, timeout)
	return c, c.end
}

// init readies the zero c as newOpCtx does, for a context allocated with
// its Call (see Group.execute).
func (c *opCtx) init(parent context.Context, timeout time.Duration) {
	c.parent, c.deadline = parent, time.Now().Add(timeout)
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
}

func (c *opCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *opCtx) Value(key any) any {
	if r := c.real.Load(); r != nil {
		return (*r).Value(key)
	}
	return c.parent.Value(key)
}

func (c *opCtx) String() string { return "core.opCtx" }

// Done makes the real context on first use.
func (c *opCtx) Done() <-chan struct{} {
	if d := c.done.Load(); d != nil {
		return *d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.done.Load(); d != nil {
		return *d
	}
	if c.err != nil {
		c.done.Store(&endedDone)
		return endedDone
	}
	real, stop := context.WithDeadline(c.parent, c.deadline)
	d := real.Done()
	c.real.Store(&real)
	c.stop = stop
	c.done.Store(&d)
	return d
}

// Err reports a cancellation, the parent's end or a deadline that has
// passed, whether or not Done was asked for.
func (c *opCtx) Err() error {
	if r := c.real.Load(); r != nil {
		return (*r).Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.real.Load(); r != nil {
		return (*r).Err()
	}
	if c.err == nil {
		if err := c.parent.Err(); err != nil {
			c.err = err
		} else if !time.Now().Before(c.deadline) {
			c.err = context.DeadlineExceeded
		}
	}
	return c.err
}

// end cancels c, as the operation ends.
func (c *opCtx) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.stop()
	} else if c.err == nil {
		c.err = context.Canceled
	}
}

// endedDone is the Done of a context that ended before anyone asked.
var endedDone = func() <-chan struct{} { ch := make(chan struct{}); close(ch); return ch }()
