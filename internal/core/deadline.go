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
// and the timer and the Done channel are made only when something asks for
// Done, that is, when a wait is about to park. Err reads the clock, so a
// loop that polls only Err still ends at the deadline.
//
// Done, Err and Deadline keep the context contract: once Err is non-nil,
// Done is closed (or, if never asked for, made closed), and Err does not
// change again.
type opCtx struct {
	parent   context.Context
	deadline time.Time

	done atomic.Pointer[chan struct{}] // made by Done
	mu   sync.Mutex
	err  error
	stop []func() bool // the timer's and the parent's, once armed
	subs map[*afterFunc]struct{}
}

// afterFunc is one registration of AfterFunc.
type afterFunc struct{ f func() }

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

// end cancels c, as the operation ends.
func (c *opCtx) end() { c.cancel(context.Canceled) }

func (c *opCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *opCtx) Value(key any) any { return c.parent.Value(key) }

func (c *opCtx) String() string { return "core.opCtx" }

// Done arms the deadline's timer and the parent's cancellation on first
// use.
func (c *opCtx) Done() <-chan struct{} {
	if d := c.done.Load(); d != nil {
		return *d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.done.Load(); d != nil {
		return *d
	}
	d := make(chan struct{})
	c.done.Store(&d)
	if c.err != nil {
		close(d)
		return d
	}
	if c.parent.Done() != nil {
		c.stop = append(c.stop, context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) }))
	}
	if wait := time.Until(c.deadline); wait > 0 {
		t := time.AfterFunc(wait, func() { c.cancel(context.DeadlineExceeded) })
		c.stop = append(c.stop, t.Stop)
	} else {
		c.cancelLocked(context.DeadlineExceeded)
	}
	return d
}

// Err reports a cancellation, the parent's end or a deadline that has
// passed, whether or not Done was asked for.
func (c *opCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := c.parent.Err(); err != nil {
		c.cancel(err)
	} else if !time.Now().Before(c.deadline) {
		c.cancel(context.DeadlineExceeded)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc lets context.AfterFunc and context.WithCancel (Call.Parallel)
// hang on this context without a goroutine of their own: f runs once, in
// its own goroutine, when the context ends.
func (c *opCtx) AfterFunc(f func()) func() bool {
	c.Done() // an ending must be noticed for f to run
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.subs == nil {
		c.subs = map[*afterFunc]struct{}{}
	}
	c.subs[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.subs[a]
		delete(c.subs, a)
		return ok
	}
}

func (c *opCtx) cancel(err error) {
	c.mu.Lock()
	c.cancelLocked(err)
	c.mu.Unlock()
}

func (c *opCtx) cancelLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if d := c.done.Load(); d != nil {
		close(*d)
	} else {
		c.done.Store(&closedChan)
	}
	for _, stop := range c.stop {
		stop()
	}
	c.stop = nil
	for a := range c.subs {
		go a.f()
	}
	c.subs = nil
}

// closedChan is the Done of a context that ended before anyone asked.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()
