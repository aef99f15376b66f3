package transport

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
)

// Mailbox matches the messages from one source rank to posted receives.
// The zero value is not usable; call NewMailbox.
type Mailbox struct {
	mu         sync.Mutex
	posted     map[uint64][]*Pending
	unexpected map[uint64][][]byte
	err        error // once set, receives with nothing queued fail with it
	describe   string
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

// Pending is a posted receive claimed by a reader, which fills Buf and then
// calls Complete.
type Pending struct {
	Buf  []byte
	tag  uint64
	done chan struct{}
	err  error
}

// Complete finishes a claimed receive with err (nil on success).
func (p *Pending) Complete(err error) {
	p.err = err
	close(p.done)
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
	return p
}

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
		p.Complete(fill(p.Buf, data))
		return
	}
	m.unexpected[tag] = append(m.unexpected[tag], data)
	m.mu.Unlock()
}

func fill(buf, data []byte) error {
	if len(buf) != len(data) {
		return &collective.MismatchError{What: "message size in bytes", Want: int64(len(buf)), Got: int64(len(data))}
	}
	copy(buf, data)
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
	p := &Pending{Buf: buf, tag: tag, done: make(chan struct{})}
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
		p.Complete(fill(buf, data))
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
	select {
	case <-p.done:
		return p.err
	default:
	}
	start := time.Now()
	select {
	case <-p.done:
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
			m.mu.Unlock()
			return ctxError(ctx, start, "a message from "+m.describe)
		}
	}
	m.mu.Unlock()
	<-p.done
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
