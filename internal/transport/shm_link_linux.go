// The shared-memory path of a same-host pair: sends into the ring (or a CMA
// descriptor), and the reader that matches what it finds in the ring to
// posted receives, as a TCP reader does.

//go:build linux

package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

// The single-copy path, CMA: a message of at least DISTBENCH_SHM_CMA bytes
// is read by the receiver straight out of the sender's memory with
// process_vm_readv (as Open MPI's vader does), instead of being copied into
// the ring and out again; the sender waits for the receiver's read. It is
// off by default, because it measured slower than the ring at every size
// (np 2 ring allreduce, 2-core VM, bench/shm-vs-vader.sh and
// DISTBENCH_SHM_CMA=65536 distbench run --transport shm): at 1 MiB 200-300
// µs against 165-225 µs, at 16 MiB with 4 MiB chunks 6.5-12.7 ms against
// 1.6-2.0 ms. Pinning the sender's pages costs more than the copy it
// saves, and a synchronous send stalls the pipeline that the ring keeps
// full.
const shmEnvCMA = "DISTBENCH_SHM_CMA"

// shmPiece is how much a sender copies into the ring before it publishes
// it, so that a large message's receiver starts while the rest is copied.
const shmPiece = 64 << 10

// Ring frame kinds.
const (
	shmKindData = 1 // header, then the payload, padded to shmFrame
	shmKindCMA  = 2 // header only: the payload is at addr in the sender
)

// shmLink is one same-host peer's shared-memory path. Payloads go through
// the segment; handshake, heartbeats, wait queries, goodbye and abort stay
// on the pair's TCP connection, so liveness and diagnosis are TCP's.
type shmLink struct {
	t       *TCP
	p       *peer
	seg     *segment
	side    int // 0: the lower rank of the pair, 1: the higher
	out, in *ring
	peerPid int
	wt      waiter
	cmaFrom uint64 // send by CMA from this size on; 0: never
	piece   uint64 // what a sender copies before it publishes: shmPiece, or half a small ring

	// wmu is the sending side's lock, a channel so that waiting for it
	// honours a context. Shutdown takes it for good before unmapping, so a
	// sender that holds it may touch the segment. Its holder owns acks.
	wmu  chan struct{}
	acks uint32 // CMA frames sent

	scratch []byte                // the reader's, for reducing a CMA message
	verdict atomic.Pointer[error] // the TCP side's end of the peer: fail with it once the ring is drained
	stopped atomic.Bool           // our own transport is shutting down
	// consumer is held by whoever takes a frame out of the ring: the
	// reader, or a receiver waiting inline (waitInline).
	consumer atomic.Bool
	exited   chan struct{} // closed when the reader has returned
}

func newShmLink(t *TCP, p *peer, seg *segment, side int) *shmLink {
	l := &shmLink{
		t: t, p: p, seg: seg, side: side,
		out: &seg.ring[side], in: &seg.ring[1-side],
		peerPid: int(seg.hdr.pid[1-side].Load()),
		wt:      waiter{spin: t.o.Spin},
		cmaFrom: uint64(t.cmaFrom()),
		piece:   min(shmPiece, seg.ring[0].size/2),
		wmu:     make(chan struct{}, 1),
		exited:  make(chan struct{}),
	}
	if t.o.Spin > 0 {
		l.wt.look = t.spinners.wakeParked
	}
	return l
}

// frame header layout in the ring: kind u32, pad u32, tag, length, addr.
func putFrame(b []byte, kind uint32, tag, length, addr uint64) {
	binary.LittleEndian.PutUint32(b[0:], kind)
	binary.LittleEndian.PutUint64(b[8:], tag)
	binary.LittleEndian.PutUint64(b[16:], length)
	binary.LittleEndian.PutUint64(b[24:], addr)
}

func align(n uint64) uint64 { return (n + shmFrame - 1) &^ (shmFrame - 1) }

// send writes one message; the caller has checked the peer and set the
// wait-query state. It returns once the receiver may no longer need data:
// at once for a message in the ring, after the receiver's read for CMA.
func (l *shmLink) send(ctx context.Context, tag uint64, data []byte, start, deadline time.Time) error {
	select {
	case l.wmu <- struct{}{}:
	default:
		select {
		case l.wmu <- struct{}{}:
		case <-ctx.Done():
			return l.sendCtxErr(ctx, start, tag, len(data))
		case <-l.t.done:
			return collective.ErrClosed
		}
	}
	defer func() { <-l.wmu }()
	stop := func() error {
		if l.stopped.Load() {
			return collective.ErrClosed
		}
		if err := l.t.sendErr(l.p); err != nil {
			return err
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return l.sendCtxErr(ctx, start, tag, len(data))
		}
		return nil
	}
	if err := stop(); err != nil {
		return err
	}
	// Causality through the peer is invisible to the race detector here
	// as through a socket: see race_on.go.
	raceSent([][]byte{data})
	r := l.out
	head := r.ctl.head.Load()
	n := uint64(len(data))
	if l.cmaFrom > 0 && n >= l.cmaFrom && l.seg.hdr.cma[l.side].Load() == 1 {
		if err := l.space(head, shmFrame, stop); err != nil {
			return err
		}
		putFrame(r.data[head&r.mask:], shmKindCMA, tag, n, uint64(uintptr(unsafe.Pointer(&data[0]))))
		l.acks++
		want := l.acks
		l.publish(head + shmFrame)
		ack := &r.ctl.ack
		err := l.wt.await((*uint32)(unsafe.Pointer(ack)), &r.ctl.wwait, func() bool { return int32(ack.Load()-want) >= 0 }, stop)
		// The receiver reads data until it acknowledges: it must stay
		// where it is until then (Go's heap does not move objects).
		runtime.KeepAlive(data)
		if err != nil {
			// The receiver may still read data: the link cannot be
			// trusted any more, and neither can the caller's buffer.
			l.p.setErr(l.p.peerErr(fmt.Errorf("a CMA send of %d bytes (tag %d) was cut short: %v", n, tag, err)))
		}
		return err
	}
	if err := l.space(head, shmFrame+min(align(n), l.piece), stop); err != nil {
		return err
	}
	putFrame(r.data[head&r.mask:], shmKindData, tag, n, 0)
	pos := head + shmFrame
	end := pos + align(n)
	for off := uint64(0); pos < end; {
		free := r.size - (pos - r.ctl.tail.Load())
		if free == 0 {
			l.publish(pos)
			if err := l.space(pos, min(end-pos, l.piece), stop); err != nil {
				// A frame cut short breaks the ring for good.
				l.p.setErr(l.p.peerErr(fmt.Errorf("a send of %d bytes (tag %d) stopped after %d bytes: %v", n, tag, off, err)))
				return err
			}
			continue
		}
		c := min(end-pos, free, r.size-pos&r.mask, l.piece)
		if off < n {
			copy(r.data[pos&r.mask:pos&r.mask+c], data[off:min(off+c, n)])
		}
		off += c
		pos += c
		if off < n && pos < end && c == l.piece {
			l.publish(pos)
		}
	}
	l.publish(end)
	return nil
}

// sendNow is send's path for a message that the ring can take whole at
// once, in one piece, with no one else sending: it cannot wait, so it
// needs no deadline, and reads no clock (two clock reads were a tenth of
// a 4 KiB allreduce). It reports false, having done nothing, for anything
// else (a message to wait for room for, to send in pieces or by CMA, a
// link that is stopping), which send then takes. The caller has checked
// the peer.
func (l *shmLink) sendNow(tag uint64, data []byte) bool {
	n := uint64(len(data))
	r := l.out
	if (l.cmaFrom > 0 && n >= l.cmaFrom) || align(n) > l.piece {
		return false
	}
	select {
	case l.wmu <- struct{}{}:
	default:
		return false
	}
	defer func() { <-l.wmu }()
	head := r.ctl.head.Load()
	end := head + shmFrame + align(n)
	if l.stopped.Load() || r.size-(head-r.ctl.tail.Load()) < end-head {
		return false
	}
	raceSent([][]byte{data})
	putFrame(r.data[head&r.mask:], shmKindData, tag, n, 0)
	for pos, off := head+shmFrame, uint64(0); off < n; { // at most twice: the ring may wrap
		c := min(n-off, r.size-pos&r.mask)
		copy(r.data[pos&r.mask:pos&r.mask+c], data[off:off+c])
		off += c
		pos += c
	}
	l.publish(end)
	return true
}

func (l *shmLink) sendCtxErr(ctx context.Context, start time.Time, tag uint64, size int) error {
	if ctx.Err() == context.DeadlineExceeded || ctx.Err() == nil {
		return &collective.TimeoutError{After: time.Since(start), Waiting: fmt.Sprintf("%s to take %d bytes (tag %d) from shared memory", l.p.describe(), size, tag)}
	}
	return fmt.Errorf("sending %d bytes (tag %d) to %s: %w", size, tag, l.p.describe(), ctx.Err())
}

// space waits until the ring has room for n bytes after pos.
func (l *shmLink) space(pos, n uint64, stop func() error) error {
	c := l.out.ctl
	size := l.out.size
	return l.wt.await(lo32(&c.tail), &c.wwait, func() bool { return size-(pos-c.tail.Load()) >= n }, stop)
}

func (l *shmLink) publish(head uint64) {
	raceSent(nil) // the copies into the ring happened before the peer reads them
	c := l.out.ctl
	c.head.Store(head)
	wake(lo32(&c.head), &c.rwait)
}

// readLoop is the consumer of the peer's ring, until the TCP side says the
// peer has gone (and the ring is drained) or this transport closes.
func (l *shmLink) readLoop() {
	defer l.t.wg.Done()
	defer close(l.exited)
	err := l.readFrames()
	if l.stopped.Load() {
		return // our own Close or Abort: the mailbox already says so
	}
	var perr *collective.PeerError
	if !errors.As(err, &perr) {
		err = l.p.setErr(l.p.peerErr(err))
	}
	l.p.box.Fail(err)
}

var errShmStopped = errors.New("transport closed")

// stopRead is the reader's stop condition: our close, or the peer's end
// (once the ring holds nothing more).
func (l *shmLink) stopRead() error {
	if l.stopped.Load() {
		return errShmStopped
	}
	if v := l.verdict.Load(); v != nil {
		return *v
	}
	return nil
}

// avail waits until n bytes past the consumer's tail are published.
func (l *shmLink) avail(n uint64) error {
	c := l.in.ctl
	ready := func() bool { return c.head.Load()-c.tail.Load() >= n }
	return l.wt.await(lo32(&c.head), &c.rwait, ready, l.stopRead)
}

func (l *shmLink) release(tail uint64) {
	c := l.in.ctl
	c.tail.Store(tail)
	wake(lo32(&c.tail), &c.wwait)
}

// readFrames takes frames out of the ring until the link ends. It shares
// the ring's consumer end with receivers that wait inline (see
// waitInline): whoever holds consumer takes the next frame. When the link
// ends it keeps consumer for good, once no inline receiver is inside, so
// that nobody touches the ring after the reader has gone (and the segment
// may be unmapped).
func (l *shmLink) readFrames() error {
	c := l.in.ctl
	for {
		err := l.avail(shmFrame)
		for !l.consumer.CompareAndSwap(false, true) {
			runtime.Gosched() // a receiver is taking a frame itself
		}
		if c.head.Load()-c.tail.Load() < shmFrame {
			if err != nil {
				return err // consumer stays taken
			}
			l.consumer.Store(false) // a receiver took the frame
			continue
		}
		raceReceived()
		err = l.readFrame()
		if err != nil {
			return err
		}
		l.consumer.Store(false)
	}
}

// readFrame takes the frame at the ring's tail, whose header is published;
// the caller holds consumer.
func (l *shmLink) readFrame() error {
	r := l.in
	tail := r.ctl.tail.Load()
	b := r.data[tail&r.mask : tail&r.mask+shmFrame]
	kind := binary.LittleEndian.Uint32(b[0:])
	tag := binary.LittleEndian.Uint64(b[8:])
	size := binary.LittleEndian.Uint64(b[16:])
	addr := binary.LittleEndian.Uint64(b[24:])
	if size > uint64(l.t.maxMsg) {
		return fmt.Errorf("protocol error: a %d-byte message in shared memory exceeds the %d-byte limit", size, l.t.maxMsg)
	}
	l.release(tail + shmFrame)
	l.t.wire.recv.Add(int64(size))
	switch kind {
	case shmKindData:
		return l.readData(tag, int(size))
	case shmKindCMA:
		return l.readCMA(tag, int(size), addr)
	}
	return fmt.Errorf("protocol error: frame kind %d in shared memory", kind)
}

// readData takes a message out of the ring: straight into a posted
// receive's buffer (copied or reduced, a piece at a time as the sender
// publishes it), or into fresh memory for the unexpected queue.
func (l *shmLink) readData(tag uint64, size int) error {
	box := l.p.box
	pd := box.Claim(tag, size)
	if pd == nil {
		data := make([]byte, size)
		if err := l.drain(size, 1, func(off int, b []byte) { copy(data[off:], b) }); err != nil {
			return err
		}
		box.Deliver(tag, data)
		return nil
	}
	defer box.Filled(pd)
	elem, absorb := 1, pd.Absorb
	switch {
	case len(pd.Buf) != size:
		absorb = func(int, []byte) {}
	case pd.Reduces():
		elem = pd.Elem()
	}
	if err := l.drain(size, elem, absorb); err != nil {
		pd.Complete(l.readErr(err))
		return err
	}
	if len(pd.Buf) != size {
		pd.Complete(MismatchFor(pd, size))
	} else {
		pd.Complete(nil)
	}
	return nil
}

func (l *shmLink) readErr(err error) error {
	if errors.Is(err, errShmStopped) {
		return collective.ErrClosed
	}
	var perr *collective.PeerError
	if errors.As(err, &perr) {
		return err
	}
	return l.p.setErr(l.p.peerErr(err))
}

// drain hands the next size bytes of the ring to fn in pieces of whole
// elem-byte elements, releasing each as soon as fn returns, then skips the
// frame's padding. Pieces never straddle the ring's end, which falls on a
// frame boundary plus a multiple of 64 bytes: whole elements.
func (l *shmLink) drain(size, elem int, fn func(off int, b []byte)) error {
	r := l.in
	tail := r.ctl.tail.Load()
	for off := 0; off < size; {
		want := uint64(min(elem, size-off))
		if r.ctl.head.Load()-tail < want {
			if err := l.avail(want); err != nil {
				return err
			}
		}
		raceReceived()
		have := r.ctl.head.Load() - tail
		c := min(uint64(size-off), have, r.size-tail&r.mask)
		c -= c % uint64(elem)
		at := tail & r.mask
		fn(off, r.data[at:at+c])
		off += int(c)
		tail += c
		l.release(tail)
	}
	if pad := align(uint64(size)) - uint64(size); pad > 0 {
		if err := l.avail(pad); err != nil {
			return err
		}
		l.release(tail + pad)
	}
	return nil
}

// readCMA reads a message out of the sender's memory, then acknowledges it
// so that the sender's Send returns.
func (l *shmLink) readCMA(tag uint64, size int, addr uint64) error {
	box := l.p.box
	var err error
	pd := box.Claim(tag, size)
	switch {
	case pd == nil:
		data := make([]byte, size)
		if err = cmaReadFull(l.peerPid, data, addr); err == nil {
			box.Deliver(tag, data)
		}
	case len(pd.Buf) != size:
		pd.Complete(MismatchFor(pd, size))
		box.Filled(pd)
	case pd.Reduces():
		// A cache-sized piece at a time: read, then reduced from cache.
		if l.scratch == nil {
			l.scratch = make([]byte, 256<<10)
		}
		piece := len(l.scratch) / pd.Elem() * pd.Elem()
		for off := 0; off < size && err == nil; off += piece {
			b := l.scratch[:min(piece, size-off)]
			if err = cmaReadFull(l.peerPid, b, addr+uint64(off)); err == nil {
				pd.Absorb(off, b)
			}
		}
		fallthrough
	default:
		if !pd.Reduces() {
			err = cmaReadFull(l.peerPid, pd.Buf, addr)
		}
		if err != nil {
			err = l.p.setErr(l.p.peerErr(fmt.Errorf("reading a %d-byte message (tag %d) from pid %d: %w", size, tag, l.peerPid, err)))
		}
		pd.Complete(err)
		box.Filled(pd)
	}
	if err != nil {
		return err
	}
	c := l.in.ctl
	c.ack.Add(1)
	wake((*uint32)(unsafe.Pointer(&c.ack)), &c.wwait)
	return nil
}

// peerGone is the TCP side's news that the peer closed, aborted or died:
// the reader delivers what the ring still holds (everything sent before a
// goodbye is there by then), then fails the mailbox with err.
func (l *shmLink) peerGone(err error) {
	l.verdict.CompareAndSwap(nil, &err)
	futexWake(lo32(&l.in.ctl.head))
}

// stop ends the link for our own shutdown: the reader and any sender stop
// waiting, and once both are out of the segment it is unmapped (a link
// still in use after CloseTimeout keeps its mapping, which is harmless).
func (l *shmLink) stop(deadline time.Time) {
	l.stopped.Store(true)
	futexWake(lo32(&l.in.ctl.head))
	futexWake(lo32(&l.out.ctl.tail))
	futexWake((*uint32)(unsafe.Pointer(&l.out.ctl.ack)))
	tm := time.NewTimer(time.Until(deadline))
	defer tm.Stop()
	select {
	case l.wmu <- struct{}{}: // never released: the segment is going
	case <-tm.C:
		return
	}
	select {
	case <-l.exited:
	case <-tm.C:
		return
	}
	l.seg.unmap()
}
