// A receiver's wait on a peer over shared memory, made on its own
// goroutine: it takes whole frames out of the ring itself, sharing the
// consumer end with the reader (shmLink.consumer).

//go:build linux

package transport

import (
	"context"
	"encoding/binary"
	"runtime"
	"time"
)

// Outcomes of takeInline.
const (
	inlineTook   = iota // took a frame
	inlineEmpty         // the ring holds no frame yet
	inlineReader        // the reader is taking a frame, or the one there is its to take
)

// takeInline takes the frame at the ring's tail on the caller's goroutine,
// if no one else is taking one and the whole frame is published, so that
// taking it cannot wait. A CMA frame, or one still being written (a large
// message, published a piece at a time so that its receiver starts early),
// is left to the reader, which takes it as it comes.
func (l *shmLink) takeInline() int {
	if !l.consumer.CompareAndSwap(false, true) {
		return inlineReader
	}
	defer l.consumer.Store(false)
	r := l.in
	tail := r.ctl.tail.Load()
	have := r.ctl.head.Load() - tail
	if have < shmFrame {
		return inlineEmpty
	}
	raceReceived()
	b := r.data[tail&r.mask : tail&r.mask+shmFrame]
	size := binary.LittleEndian.Uint64(b[16:])
	if binary.LittleEndian.Uint32(b[0:]) != shmKindData || size > uint64(l.t.maxMsg) || have < shmFrame+align(size) {
		return inlineReader
	}
	if err := l.readFrame(); err != nil {
		// Nothing in a whole data frame waits, so this cannot happen;
		// if it did, the ring could not be trusted.
		l.p.box.Fail(l.p.setErr(l.p.peerErr(err)))
	}
	return inlineTook
}

// inlineBusyPolls is how many polls in a row that find the reader taking
// a frame make a receiver stop waiting inline.
const inlineBusyPolls = 4

// inlineYieldEvery is how many polls a receiver waiting inline makes
// between yields to the process's other goroutines (its TCP control
// traffic, heartbeats): a yield takes the scheduler's lock, a poll a few
// nanoseconds.
const inlineYieldEvery = 128

// waitInline waits for p, a receive from this link's peer, on the
// receiver's own goroutine, taking the ring's frames itself: a small
// message then costs no hand-off from the reader goroutine (a park, a
// wake-up and two trips through the scheduler, most of the engine's time
// at 4 KiB). It polls while spinning is allowed (TCPOptions.Spin), a few
// times otherwise, and never past ctx's deadline or the link's end; it
// reports whether p completed, and if not, Mailbox.Wait parks as before.
// The clock is read only every few dozen polls: a message that is there at
// once costs none.
func (l *shmLink) waitInline(ctx context.Context, p *Pending) bool {
	var until, deadline time.Time
	busy := 0 // consecutive polls that found the reader at a frame
	for i := 1; ; i++ {
		took := l.takeInline()
		if p.isDone() {
			return true
		}
		if l.wt.spin <= 0 {
			if i >= shmEagerPolls {
				return false
			}
			runtime.Gosched()
			continue
		}
		if took != inlineReader {
			busy = 0
		} else if busy++; busy >= inlineBusyPolls {
			// A large message is streaming through the reader: park
			// and leave it the processor, as a receiver always did,
			// rather than trade the scheduler's lock with it at
			// every poll.
			return false
		} else {
			runtime.Gosched() // on one processor the reader runs only when this goroutine gives way
		}
		if i%64 == 0 {
			now := time.Now()
			if until.IsZero() {
				until = now.Add(l.wt.spin)
				deadline, _ = ctx.Deadline()
				p.blocked.CompareAndSwap(0, stamp(now))
			}
			if !now.Before(until) || (!deadline.IsZero() && !now.Before(deadline)) || l.stopRead() != nil {
				return false
			}
			if l.wt.look != nil && i%1024 == 0 {
				l.wt.look()
			}
		}
		if i%inlineYieldEvery == 0 {
			runtime.Gosched()
		}
	}
}
