// The receive path: each peer's reader, matching frames to posted
// receives or the unexpected queue, and a shaped link's delay line.

package transport

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/wire"
)

// Recv receives the next message from peer under tag into buf. A timeout
// is a *collective.TimeoutError naming the peer; a failed peer, a
// *collective.PeerError.
func (t *TCP) Recv(ctx context.Context, peer int, tag uint64, buf []byte) error {
	p, err := t.peer(peer)
	if err != nil {
		return err
	}
	return p.box.Recv(ctx, tag, buf)
}

// PostRecv posts a receive of the next message from peer under tag into buf;
// the returned receive's Wait completes it. See Mailbox.Post.
func (t *TCP) PostRecv(peer int, tag uint64, buf []byte) (driver.Posted, error) {
	p, err := t.peer(peer)
	if err != nil {
		return nil, err
	}
	return p.box.Post(tag, buf), nil
}

// PostRecvReduce posts a receive that reduces the next message from peer
// under tag into buf as it is read; see driver.ReducePoster.
func (t *TCP) PostRecvReduce(peer int, tag uint64, buf []byte, red driver.Reduction) (driver.Posted, error) {
	p, err := t.peer(peer)
	if err != nil {
		return nil, err
	}
	return p.box.PostReduce(tag, buf, red), nil
}

// readLoop reads frames from one peer until the connection ends.
func (t *TCP) readLoop(p *peer) {
	defer t.wg.Done()
	err := t.readFrames(p)
	switch {
	case t.isClosed():
		// Our own Close or Abort: the mailboxes already say so.
	case p.gotBye.Load():
		// The end that the goodbye frame announced.
	default:
		perr := p.setErr(p.peerErr(t.describeNetErr(err)))
		t.o.Logf("transport: rank %d: lost %s: %v", t.o.Rank, p.describe(), perr)
		p.fail(perr)
	}
	p.dr.end.retire()
	p.wend.retire()
	p.conn.Close()
	if p.delay != nil {
		close(p.delay)
	}
	close(p.exited)
}

func (t *TCP) readFrames(p *peer) error {
	var hb [wire.HeaderSize]byte
	for {
		if _, err := io.ReadFull(p.r, hb[:]); err != nil {
			return err
		}
		h, err := wire.DecodeHeader(&hb, uint64(t.maxMsg))
		if err != nil {
			return fmt.Errorf("protocol error: %w", err)
		}
		if t.ingress != nil {
			t.ingress.begin()
			t.ingress.waitHeader(t.done, h.Length)
		}
		err = t.handleFrame(p, h)
		if t.ingress != nil {
			t.ingress.end()
		}
		if err != nil {
			return err
		}
		if pad := wire.PadLen(h.Length); pad > 0 {
			if _, err := p.r.Discard(pad); err != nil {
				return err
			}
		}
	}
}

// handleFrame acts on one frame whose header has been read.
func (t *TCP) handleFrame(p *peer, h wire.Header) error {
	switch h.Kind {
	case wire.KindHeartbeat:
	case wire.KindData:
		return t.readData(p, h)
	case wire.KindClose:
		p.gotBye.Store(true)
		perr := p.setErr(p.peerErr(ErrPeerClosed))
		p.fail(perr)
		t.answerBye(p)
	case wire.KindAbort:
		var text [wire.MaxAbortText]byte
		if _, err := io.ReadFull(p.r, text[:h.Length]); err != nil {
			return err
		}
		p.gotBye.Store(true)
		t.peerAborted(p, wire.Sanitize(string(text[:h.Length]), wire.MaxAbortText))
		t.answerBye(p)
	case wire.KindWaitQuery:
		// The state as of now, answered by respond: the reader must not
		// wait for the write lock, which a send to this peer may hold
		// while the peer's reader waits for ours.
		select {
		case p.answers <- answer{h.Tag, t.waitState()}:
		default:
			// A flood of queries; the asker's deadline covers any dropped.
		}
	case wire.KindWaitReply:
		var b [wire.MaxWaits * wire.WaitSize]byte
		if _, err := io.ReadFull(p.r, b[:h.Length]); err != nil {
			return err
		}
		ws, err := wire.DecodeWaits(b[:h.Length])
		if err != nil {
			return fmt.Errorf("protocol error: %w", err)
		}
		t.qmu.Lock()
		q, ok := t.queries[h.Tag]
		t.qmu.Unlock()
		if ok && q.p == p {
			select {
			case q.ch <- ws:
			default: // a duplicate reply
			}
		}
	}
	return nil
}

// readData reads one message's payload: straight into a posted receive's
// buffer when there is one (no copy), into fresh memory for the unexpected
// queue otherwise.
func (t *TCP) readData(p *peer, h wire.Header) error {
	size := int(h.Length)
	t.wire.recv.Add(int64(size))
	if t.isClosed() {
		return t.readPayload(p, nil, size)
	}
	if p.delay != nil {
		// With latency, a message is matched when it becomes visible,
		// not when it is read, or a later message could be matched
		// ahead of one still in the delay line; so it waits in fresh
		// memory.
		data := make([]byte, size)
		if err := t.readPayload(p, data, size); err != nil {
			return err
		}
		p.after(func() { p.box.Deliver(h.Tag, data) })
		return nil
	}
	p.dr.sawData()
	defer p.dr.sawData()
	if pd := p.box.Claim(h.Tag, size); pd != nil {
		return t.readInto(p, pd, nil, 0, size)
	}
	if size <= claimChunk {
		data := make([]byte, size)
		if err := t.readPayload(p, data, size); err != nil {
			return err
		}
		p.box.Deliver(h.Tag, data)
		return nil
	}
	return t.readUnexpected(p, h.Tag, size)
}

// claimChunk: a large message that arrives before its receive is read a
// chunk at a time, looking between chunks for a receive posted meanwhile.
// A stream whose receiver re-posts a moment after each message (the usual
// case) then still lands in place, instead of going through fresh memory
// and a copy.
const claimChunk = 256 << 10

// stagingSize is how much of a large unexpected message is read into a
// pooled buffer before the reader gives up waiting for a receive and
// allocates the message's own memory.
const stagingSize = 4 << 20

var staging = sync.Pool{New: func() any { b := make([]byte, stagingSize); return &b }}

// readUnexpected reads a large message that no receive was waiting for.
func (t *TCP) readUnexpected(p *peer, tag uint64, size int) error {
	sp := staging.Get().(*[]byte)
	defer staging.Put(sp)
	var data []byte // the message's own memory, once staging is not enough
	for got := 0; got < size; {
		if pd := p.box.Claim(tag, size); pd != nil {
			have := *sp
			if data != nil {
				have = data
			}
			return t.readInto(p, pd, have[:got], got, size)
		}
		c := min(claimChunk, size-got)
		if data == nil && got+c > stagingSize {
			data = make([]byte, size)
			copy(data, (*sp)[:got])
		}
		dst := *sp
		if data != nil {
			dst = data
		}
		if err := t.readPayload(p, dst[got:got+c], c); err != nil {
			return err
		}
		got += c
	}
	if data == nil { // all of it fitted in staging
		data = append([]byte(nil), (*sp)[:size]...)
	}
	p.box.Deliver(tag, data)
	return nil
}

// readInto completes a claimed receive with a size-byte message of which
// the first len(head) bytes, got, have been read already.
func (t *TCP) readInto(p *peer, pd *Pending, head []byte, got, size int) error {
	defer p.box.Filled(pd)
	if len(pd.Buf) != size {
		err := t.readPayload(p, nil, size-got)
		pd.Complete(MismatchFor(pd, size))
		return err
	}
	pd.Absorb(0, head)
	var err error
	if pd.Reduces() {
		err = t.readReduce(p, pd, got, size)
	} else {
		err = t.readPayload(p, pd.Buf[got:], size-got)
	}
	if err != nil {
		if t.isClosed() {
			pd.Complete(collective.ErrClosed)
		} else {
			pd.Complete(p.setErr(p.peerErr(t.describeNetErr(err))))
		}
		return err
	}
	pd.Complete(nil)
	return nil
}

// readReduce reduces the message's bytes from off to size into pd.Buf a
// read buffer at a time, straight out of the buffered reader: the bytes go
// from the kernel into the reader's buffer, which stays in cache, and from
// there into Buf, with no staging buffer and no second pass over memory.
func (t *TCP) readReduce(p *peer, pd *Pending, off, size int) error {
	elem := pd.Elem()
	piece := p.r.Size() / elem * elem
	for off < size {
		n := min(size-off, piece)
		b, err := p.r.Peek(n)
		if err != nil {
			return err
		}
		pd.Absorb(off, b)
		p.r.Discard(n)
		if t.ingress != nil {
			t.ingress.wait(context.Background(), t.done, n, true)
		}
		off += n
	}
	return nil
}

// readPayload reads size bytes into buf, or discards them when buf is nil,
// at the ingress rate when shaped.
func (t *TCP) readPayload(p *peer, buf []byte, size int) error {
	if buf != nil && t.ingress == nil {
		_, err := io.ReadFull(p.r, buf)
		return err
	}
	if buf == nil && t.ingress == nil {
		_, err := io.CopyN(io.Discard, p.r, int64(size))
		return err
	}
	var scratch []byte
	for off := 0; off < size; {
		c := min(size-off, t.chunk)
		var err error
		if buf != nil {
			_, err = io.ReadFull(p.r, buf[off:off+c])
		} else {
			if scratch == nil {
				scratch = make([]byte, t.chunk)
			}
			_, err = io.ReadFull(p.r, scratch[:c])
		}
		if err != nil {
			return err
		}
		t.ingress.wait(context.Background(), t.done, c, true)
		off += c
	}
	return nil
}

// fail fails the receives from p with err, after the link's latency; a
// shared-memory link first delivers what its ring still holds.
func (p *peer) fail(err error) {
	if p.shm != nil {
		p.shm.peerGone(err)
		return
	}
	p.after(func() { p.box.Fail(err) })
}

// event is an entry in a link's delay line.
type event struct {
	due time.Time
	fn  func()
}

// after runs fn when the link's latency has passed, in order with the
// link's other events; at once on an unshaped link. Only the reader calls it.
func (p *peer) after(fn func()) {
	if p.delay == nil {
		fn()
		return
	}
	now := time.Now()
	if c := p.t.o.clock; c != nil {
		now = c.now()
	}
	select {
	case p.delay <- event{now.Add(p.t.latency), fn}:
	case <-p.t.done:
		fn()
	}
}

// delayLine runs a link's events at their due times. Due times only grow
// (reads are in order, the latency is fixed), so a FIFO is a delay line.
func (t *TCP) delayLine(p *peer) {
	defer t.wg.Done()
	for d := range p.delay {
		if c := t.o.clock; c != nil {
			c.sleepUntil(context.Background(), t.done, d.due)
		} else {
			sleepUntilExactly(t.done, d.due)
		}
		d.fn()
	}
}
