// The send path: framing, writev, link shaping and send failures.

package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
)

// sendErr is why a send to p cannot start, or nil.
func (t *TCP) sendErr(p *peer) error {
	if !t.broken.Load() { // the usual case, without the lock
		return p.err()
	}
	t.mu.Lock()
	closed, jobErr := t.closed, t.jobErr
	t.mu.Unlock()
	switch {
	case closed:
		return collective.ErrClosed
	case jobErr != nil:
		return jobErr
	}
	return p.err()
}

// Send writes one frame: header and payload in one writev, with no copy of
// data. It returns once the kernel has the bytes. Its deadline is ctx's
// (collective.DefaultTimeout if ctx has none).
func (t *TCP) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	p, err := t.peer(peer)
	if err != nil {
		return err
	}
	if int64(len(data)) > t.maxMsg {
		return collective.Invalidf("transport: message of %d bytes to %s exceeds the %d-byte limit (TCPOptions.MaxMessage)", len(data), p.describe(), t.maxMsg)
	}
	if err := t.sendErr(p); err != nil {
		return err
	}
	if p.shm != nil {
		return t.sendShm(ctx, p, tag, data)
	}
	start := time.Now()
	if err := p.lock(ctx); err != nil {
		return t.sendFailed(ctx, p, err, 0, start, len(data), tag)
	}
	defer p.unlock()
	if err := t.sendErr(p); err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = start.Add(collective.DefaultTimeout)
	}
	h := wire.Header{Kind: wire.KindData, Tag: tag, Length: uint64(len(data))}
	p.sendTag.Store(tag)
	p.sendSince.Store(mono(start))
	var n int64
	if t.egress != nil {
		n, err = t.writeShaped(ctx, p, h, data, deadline)
	} else {
		n, err = p.writeLocked(h, data, deadline)
	}
	p.sendSince.Store(0)
	if err != nil {
		return t.sendFailed(ctx, p, err, n, start, len(data), tag)
	}
	p.lastWrite.Store(int64(time.Since(t.epoch)))
	t.wire.sent.Add(int64(len(data)))
	return nil
}

// sendShm sends to a same-host peer through shared memory, under the
// link's own lock: the TCP connection's stays free for control frames.
func (t *TCP) sendShm(ctx context.Context, p *peer, tag uint64, data []byte) error {
	if p.shm.sendNow(tag, data) {
		t.wire.sent.Add(int64(len(data)))
		return nil
	}
	start := time.Now()
	deadline, ok := ctx.Deadline()
	if !ok {
		// Checked by the send's waits, not a context of its own: a timer
		// per message is a measurable part of a 4 KiB allreduce.
		deadline = start.Add(collective.DefaultTimeout)
	}
	p.sendTag.Store(tag)
	p.sendSince.Store(mono(start))
	err := p.shm.send(ctx, tag, data, start, deadline)
	p.sendSince.Store(0)
	if err == nil {
		t.wire.sent.Add(int64(len(data)))
	}
	return err
}

// writeLocked writes a whole frame (header, payload, padding) in one writev;
// the caller holds the write lock.
func (p *peer) writeLocked(h wire.Header, payload []byte, deadline time.Time) (int64, error) {
	return p.writeFramed(&h, payload, wire.PadLen(uint64(len(payload))), deadline)
}

// writeFramed writes the header h (none if nil), then payload, then pad zero
// bytes, in one writev; the caller holds the write lock.
func (p *peer) writeFramed(h *wire.Header, payload []byte, pad int, deadline time.Time) (int64, error) {
	p.conn.SetWriteDeadline(deadline)
	p.bufs = p.vec[:0]
	if h != nil {
		h.Encode(&p.whdr)
		p.bufs = append(p.bufs, p.whdr[:])
	}
	if len(payload) > 0 {
		p.bufs = append(p.bufs, payload)
	}
	if pad > 0 {
		p.bufs = append(p.bufs, zeros[:pad])
	}
	n, err := p.writeBufs(p.bufs, deadline)
	clear(p.vec[:]) // do not keep the caller's buffer alive
	return n, err
}

// writeControl writes a control frame (heartbeat, wait query or reply); the
// caller holds the write lock. A frame cut short has broken the stream, so
// the connection is dropped; other failures are the reader's to report.
func (t *TCP) writeControl(p *peer, what string, h wire.Header, payload []byte, deadline time.Time) error {
	n, err := p.writeLocked(h, payload, deadline)
	switch {
	case err == nil:
		p.lastWrite.Store(int64(time.Since(t.epoch)))
	case n > 0:
		p.setErr(p.peerErr(fmt.Errorf("%s stopped after %d bytes (%v); the connection was dropped", what, n, err)))
		p.conn.Close()
	}
	return err
}

// zeros pads frames to wire.FrameAlign.
var zeros [wire.FrameAlign]byte

// writeBufs writes bufs in one writev where it can, spinning while the
// socket is full when Spin is set; the caller holds the write lock and has
// set the write deadline.
func (p *peer) writeBufs(bufs net.Buffers, deadline time.Time) (int64, error) {
	raceSent(bufs)
	if p.raw != nil {
		return p.writeSpin(bufs, deadline)
	}
	return bufs.WriteTo(p.conn)
}

// writeShaped writes a frame a chunk at a time, each when the egress pacer
// says its serialization has ended.
func (t *TCP) writeShaped(ctx context.Context, p *peer, h wire.Header, data []byte, deadline time.Time) (int64, error) {
	t.egress.begin()
	defer t.egress.end()
	first := min(len(data), t.chunk)
	if err := t.egress.wait(ctx, t.done, wire.HeaderSize+first, false); err != nil {
		return 0, err
	}
	pad := wire.PadLen(uint64(len(data)))
	last := func(end int) int { // the padding goes out with the last piece
		if end == len(data) {
			return pad
		}
		return 0
	}
	n, err := p.writeFramed(&h, data[:first], last(first), deadline)
	for off := first; err == nil && off < len(data); {
		c := min(len(data)-off, t.chunk)
		if err = t.egress.wait(ctx, t.done, c, false); err != nil {
			break
		}
		var m int64
		m, err = p.writeFramed(nil, data[off:off+c], last(off+c), deadline)
		n += m
		off += c
	}
	return n, err
}

// sendFailed turns a failed send into the error it returns. A send that
// wrote part of a frame has broken the stream: the connection is dropped.
func (t *TCP) sendFailed(ctx context.Context, p *peer, err error, n int64, start time.Time, size int, tag uint64) error {
	total := int64(wire.FrameSize(uint64(size)))
	if n > 0 && n < total {
		cause := fmt.Errorf("a send of %d bytes (tag %d) stopped after %d bytes (%v); the connection was dropped", size, tag, n, err)
		p.setErr(p.peerErr(cause))
		p.conn.Close() // the reader sees it and fails the mailbox
	}
	switch {
	case errors.Is(err, collective.ErrClosed):
		return collective.ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return &collective.TimeoutError{After: time.Since(start), Waiting: fmt.Sprintf("%s to take %d bytes (tag %d)", p.describe(), size, tag)}
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("sending %d bytes (tag %d) to %s: %w", size, tag, p.describe(), err)
	}
	// The connection failed. The reader usually knows why (the peer said
	// goodbye, or reset): give it a moment to say so.
	tm := time.NewTimer(200 * time.Millisecond)
	select {
	case <-p.exited:
	case <-tm.C:
	}
	tm.Stop()
	if le := t.sendErr(p); le != nil {
		return le
	}
	perr := p.setErr(p.peerErr(t.describeNetErr(err)))
	p.conn.Close()
	return perr
}
