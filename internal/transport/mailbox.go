package transport

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/wire"
)

// Mailbox matches the messages from one source rank to posted receives.
// The zero value is not usable; call NewMailbox.
type Mailbox struct {
	mu         sync.Mutex
	posted     map[uint64][]*Pending
	unexpected map[uint64][][]byte
	err        error // once set, receives with nothing queued fail with it
	describe   string

	// For wait queries (see blockedOn). stall is the receive whose Wait
	// last reached its deadline (since 0: none); guarded by mu. filling is
	// the receive a reader claimed last, which it may still be filling:
	// Claim sets it, the reader clears it once done (atomically, so that
	// the message path takes no lock for it).
	stall   stall
	filling atomic.Pointer[Pending]

	// shm, when the source is a peer over shared memory, lets Wait take
	// the message out of the ring itself (shmLink.waitInline).
	shm atomic.Pointer[shmLink]
}

// stall is a receive that timed out.
type stall struct {
	tag   uint64
	since int64 // mono time it began to block
}

// NewMailbox returns an empty mailbox; describe names the source in timeout
// messages ("rank 2 (10.0.0.3:4123)").
func NewMailbox(describe string) *Mailbox {
	return &Mailbox{
		posted:     map[uint64][]*Pending{},
		unexpected: map[uint64][][]byte{},
		describe:   describe,
	}
}

// Pending is a posted receive claimed by a reader, which fills Buf (through
// Absorb when Reduces) and then calls Complete. It is also the
// driver.Posted that PostRecv returns (one allocation per receive, not
// two).
type Pending struct {
	Buf []byte
	box *Mailbox
	tag uint64
	// red, when its Into is set, reduces the message into Buf (Buf = Buf
	// op message) instead of copying it (Buf = message).
	red driver.Reduction
	// blocked is the stamp of the time a Wait began to block on the
	// receive, 0 before: what a wait query reports. It is set on Wait's
	// slow path only, from the clock reading that path makes anyway, so a
	// receive whose message is already there costs nothing more; atomic
	// because a query reads it under the mailbox lock, which Wait does not
	// hold; 32 bits, to keep Pending small.
	blocked atomic.Uint32
	// complete is set once err is final. done is made only for a wait
	// that blocks (doneChan): a receive whose message is in by the time
	// it is waited for, the usual case of a receiver that spins, costs no
	// channel.
	complete atomic.Bool
	done     atomic.Pointer[chan struct{}]
	err      error
}

// Elem is the size of the elements a reducing receive reduces: a reader
// hands the message to Absorb in whole elements.
func (p *Pending) Elem() int { return p.red.Elem }

// Reduces reports whether the message is to be reduced into Buf rather than
// copied: the reader must then hand it over through Absorb.
func (p *Pending) Reduces() bool { return p.red.Into != nil }

// Absorb puts data, the message's bytes from offset off, into Buf: copied,
// or reduced in when the receive reduces (off and len(data) are then whole
// elements).
func (p *Pending) Absorb(off int, data []byte) {
	dst := p.Buf[off : off+len(data)]
	if p.red.Into != nil {
		p.red.Into(dst, data)
	} else {
		copy(dst, data)
	}
}

var _ driver.Posted = (*Pending)(nil)

// Wait is Mailbox.Wait of the receive, for driver.Posted.
func (p *Pending) Wait(ctx context.Context) error { return p.box.Wait(ctx, p) }

// Done marks the receive as blocked on, as Wait does on its slow path, for
// wait queries: its caller asks for it when it is about to block.
func (p *Pending) Done() <-chan struct{} {
	if !p.isDone() && p.blocked.Load() == 0 {
		p.blocked.Store(stamp(time.Now()))
	}
	return p.doneChan()
}

// isDone reports whether the receive has completed.
func (p *Pending) isDone() bool { return p.complete.Load() }

// doneChan returns a channel closed once the receive completes, making it
// on first use. Complete swaps in closedChan: whichever of the two comes
// second sees the other's.
func (p *Pending) doneChan() <-chan struct{} {
	if d := p.done.Load(); d != nil {
		return *d
	}
	ch := make(chan struct{})
	if p.done.CompareAndSwap(nil, &ch) {
		return ch
	}
	return *p.done.Load()
}

// closedChan is the done channel of a receive that completed before
// anyone waited on a channel.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// Complete finishes a claimed receive with err (nil on success).
func (p *Pending) Complete(err error) {
	p.err = err
	p.complete.Store(true)
	if d := p.done.Swap(&closedChan); d != nil && d != &closedChan {
		close(*d)
	}
}

// Claim is called by a reader that has read the header of a size-byte
// message under tag (and perhaps part of its payload, into memory of its
// own, while no receive was posted). If a receive is posted, it is returned
// claimed: the reader must fill p.Buf (when len(p.Buf) == size) or discard
// the payload, then call p.Complete. Otherwise Claim returns nil, and the
// reader reads the payload into fresh memory and calls Deliver.
func (m *Mailbox) Claim(tag uint64, size int) *Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.posted[tag]
	if len(q) == 0 || len(m.unexpected[tag]) > 0 {
		return nil
	}
	p := q[0]
	m.popPosted(tag)
	m.filling.Store(p)
	return p
}

// Filled tells the mailbox that the reader has completed p, which Claim
// returned: a wait query no longer reports it.
func (m *Mailbox) Filled(p *Pending) { m.filling.CompareAndSwap(p, nil) }

// MismatchFor is the error a claimed receive completes with when the
// message's size differs from its buffer's.
func MismatchFor(p *Pending, size int) error {
	return &collective.MismatchError{What: "message size in bytes", Want: int64(len(p.Buf)), Got: int64(size)}
}

// Deliver hands over a message whose payload the reader has read into data,
// which the mailbox now owns.
func (m *Mailbox) Deliver(tag uint64, data []byte) {
	m.mu.Lock()
	if q := m.posted[tag]; len(q) > 0 && len(m.unexpected[tag]) == 0 {
		p := q[0]
		m.popPosted(tag)
		m.mu.Unlock()
		p.Complete(fill(p, data))
		return
	}
	m.unexpected[tag] = append(m.unexpected[tag], data)
	m.mu.Unlock()
}

func fill(p *Pending, data []byte) error {
	if len(p.Buf) != len(data) {
		return MismatchFor(p, len(data))
	}
	p.Absorb(0, data)
	return nil
}

func (m *Mailbox) popPosted(tag uint64) {
	q := m.posted[tag]
	q[0] = nil
	if len(q) == 1 {
		delete(m.posted, tag)
	} else {
		m.posted[tag] = q[1:]
	}
}

// Recv fills buf with the next message under tag, waiting until ctx ends.
func (m *Mailbox) Recv(ctx context.Context, tag uint64, buf []byte) error {
	return m.Wait(ctx, m.Post(tag, buf))
}

// Post posts a receive of the next message under tag into buf and returns at
// once; Wait completes it. Receives posted before their messages arrive are
// filled in place by the reader, so a pipeline that posts several ahead
// avoids the copy out of the unexpected queue.
func (m *Mailbox) Post(tag uint64, buf []byte) *Pending {
	return m.post(&Pending{Buf: buf, tag: tag})
}

// PostReduce is Post for a receive that reduces the message into buf with
// red (buf = buf op message) instead of overwriting it. len(buf) must be a
// whole number of red's elements.
func (m *Mailbox) PostReduce(tag uint64, buf []byte, red driver.Reduction) *Pending {
	if red.Elem <= 0 || red.Into == nil || len(buf)%red.Elem != 0 {
		panic(fmt.Sprintf("transport: PostReduce of %d bytes, not whole %d-byte elements", len(buf), red.Elem))
	}
	return m.post(&Pending{Buf: buf, tag: tag, red: red})
}

func (m *Mailbox) post(p *Pending) *Pending {
	p.box = m
	tag := p.tag
	m.mu.Lock()
	if q := m.unexpected[tag]; len(q) > 0 && len(m.posted[tag]) == 0 {
		data := q[0]
		q[0] = nil
		if len(q) == 1 {
			delete(m.unexpected, tag)
		} else {
			m.unexpected[tag] = q[1:]
		}
		m.mu.Unlock()
		p.Complete(fill(p, data))
		return p
	}
	if m.err != nil {
		err := m.err
		m.mu.Unlock()
		p.Complete(err)
		return p
	}
	m.posted[tag] = append(m.posted[tag], p)
	m.mu.Unlock()
	return p
}

// Wait waits for a receive made by Post. When ctx ends first, the receive
// is withdrawn, unless a reader is already filling it: then Wait waits for
// the reader (which has its own deadline), so that buf is never written
// after Wait returns and no message is lost.
func (m *Mailbox) Wait(ctx context.Context, p *Pending) error {
	if p.isDone() {
		return p.err
	}
	if l := m.shm.Load(); l != nil && l.waitInline(ctx, p) {
		return p.err
	}
	start := time.Now()
	p.blocked.CompareAndSwap(0, stamp(start))
	select {
	case <-p.doneChan():
		return p.err
	case <-ctx.Done():
	}
	m.mu.Lock()
	q := m.posted[p.tag]
	for i, x := range q {
		if x == p {
			m.posted[p.tag] = append(q[:i:i], q[i+1:]...)
			if len(m.posted[p.tag]) == 0 {
				delete(m.posted, p.tag)
			}
			if ctx.Err() == context.DeadlineExceeded {
				// The rank fails because of this receive, and keeps
				// saying it waits for it while other ranks, which
				// time out about now too, follow their chains of
				// waits through it: withdrawn, it would look like a
				// rank that waits for nothing, and be blamed.
				m.stall = stall{tag: p.tag, since: unstamp(p.blocked.Load())}
			}
			m.mu.Unlock()
			// Withdrawn, the receive is complete, with this error: a
			// later Wait (a Cancel after a failed Wait) returns it too.
			p.Complete(ctxError(ctx, start, "a message from "+m.describe))
			return p.err
		}
	}
	m.mu.Unlock()
	<-p.doneChan()
	return p.err
}

// Fail makes every waiting and future receive fail with err, except those
// that find a message already queued. The first error wins.
func (m *Mailbox) Fail(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	err = m.err
	var waiting []*Pending
	for tag, q := range m.posted {
		waiting = append(waiting, q...)
		delete(m.posted, tag)
	}
	m.mu.Unlock()
	for _, p := range waiting {
		p.Complete(err)
	}
}

// Err returns the error the mailbox failed with, or nil.
func (m *Mailbox) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// blockedOn is this mailbox's part of the rank's wait state, a receive from
// peer: the one that timed out, if one did; else the one a Wait has blocked
// on the longest, posted or being filled; else none (kind 0). A receive
// that is posted but not waited for does not count: the rank is not
// blocked on it (it may be computing, or waiting elsewhere), and following
// it could lead a diagnosis to a peer that simply has not reached that
// message yet, or round a false cycle.
func (m *Mailbox) blockedOn(peer int) (b blockedOn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stall.since != 0 {
		return blockedOn{kind: wire.WaitRecv, timedOut: true, peer: peer, tag: m.stall.tag, since: m.stall.since}
	}
	consider := func(p *Pending) {
		if s := p.blocked.Load(); s != 0 {
			if since := unstamp(s); b.since == 0 || since < b.since {
				b = blockedOn{kind: wire.WaitRecv, peer: peer, tag: p.tag, since: since}
			}
		}
	}
	for _, q := range m.posted {
		for _, p := range q {
			consider(p)
		}
	}
	if p := m.filling.Load(); p != nil && !p.isDone() {
		consider(p)
	}
	return b
}

// ctxError turns a finished context into the error an operation reports:
// a *collective.TimeoutError for a deadline, the context's error otherwise.
func ctxError(ctx context.Context, start time.Time, waiting string) error {
	if ctx.Err() == context.DeadlineExceeded {
		return &collective.TimeoutError{After: time.Since(start), Waiting: waiting}
	}
	return fmt.Errorf("waiting for %s: %w", waiting, ctx.Err())
}

// CtxError is ctxError for the transports outside this file.
var CtxError = ctxError
