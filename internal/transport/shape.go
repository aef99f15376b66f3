package transport

import (
	"context"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
)

// How a pacer tells a busy NIC from an idle one. Sleepers wake late on a
// loaded machine; time lost that way while the NIC is busy (a message in
// flight, or several senders sharing it) is caught up afterwards, up to
// busySlack, so that a shaped link keeps its rate. Time the NIC spends idle
// is not banked beyond idleSlack: a message sent after a pause still pays
// its full serialization time, which is what latency-bound benchmarks
// measure.
const (
	idleSlack = 500 * time.Microsecond
	busySlack = 20 * time.Millisecond
)

// A clock is the shaper's time: what its pacers and delay lines take for
// now, and how they wait. nil is real time (time.Now, nanosleep, timers).
// Tests substitute a virtual clock, so that they check the pacing exactly
// whatever the machine's speed; the call costs nothing measurable on a path
// that waits about a millisecond per chunk.
type clock interface {
	now() time.Time
	// sleepUntil returns at t, or sooner with ctx's error or
	// collective.ErrClosed when done is closed.
	sleepUntil(ctx context.Context, done <-chan struct{}, t time.Time) error
}

// pacer is a token bucket in the form of a schedule: it hands out
// consecutive slots of serialization time at a fixed rate. Several links
// share one, which is how they share a NIC. Users bracket each message with
// begin and end, so that the pacer knows when the NIC is idle.
type pacer struct {
	nsPerByte float64
	chunk     int   // bytes to pace at a time: about a millisecond's worth
	clk       clock // nil: real time

	mu     sync.Mutex
	next   time.Time // end of the last slot handed out
	active int       // messages in progress
	fresh  bool      // the next slot follows idleness: no catching up
}

func newPacer(bitsPerSec int64, clk clock) *pacer {
	bytesPerSec := float64(bitsPerSec) / 8
	return &pacer{
		nsPerByte: 1e9 / bytesPerSec,
		chunk:     int(min(max(bytesPerSec/1000, 1<<10), 1<<20)),
		clk:       clk,
	}
}

func (p *pacer) now() time.Time {
	if p.clk != nil {
		return p.clk.now()
	}
	return time.Now()
}

// begin marks the start of a message.
func (p *pacer) begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active++
	if p.active == 1 && p.next.Before(p.now().Add(-idleSlack)) {
		p.fresh = true
	}
}

// end marks the end of a message.
func (p *pacer) end() {
	p.mu.Lock()
	p.active--
	p.mu.Unlock()
}

// reserve books n bytes and returns when their serialization ends. A sender
// (backdate false) starts the slot no earlier than now. A receiver (backdate
// true) reads bytes that were already on their way, so it lets the slot
// start up to its own length in the past: a stream that arrives paced at
// the rate passes without an extra delay, while one that arrives faster (or
// from several senders at once) is held to the rate.
func (p *pacer) reserve(n int, backdate bool) time.Time {
	back := 0
	if backdate {
		back = n
	}
	return p.book(n, back)
}

// book is reserve with a slot that may start up to back bytes'
// serialization in the past.
func (p *pacer) book(n, back int) time.Time {
	d := time.Duration(float64(n) * p.nsPerByte)
	earliest := p.now().Add(-time.Duration(float64(back) * p.nsPerByte))
	p.mu.Lock()
	defer p.mu.Unlock()
	floor := earliest.Add(-busySlack)
	if p.fresh {
		floor, p.fresh = earliest, false
	}
	start := p.next
	if start.Before(floor) {
		start = floor
	}
	p.next = start.Add(d)
	return p.next
}

// wait reserves n bytes and sleeps until their slot ends, or ctx or done
// ends first.
func (p *pacer) wait(ctx context.Context, done <-chan struct{}, n int, backdate bool) error {
	return p.sleepUntil(ctx, done, p.reserve(n, backdate))
}

// waitHeader is a receiver's wait for a frame's header. The sender paced
// the header together with the first piece of the payload (see
// TCP.writeShaped), so the header's slot may start that piece earlier:
// then the piece, read next, passes at once rather than wait for its
// serialization a second time, which doubled a small message's.
func (p *pacer) waitHeader(done <-chan struct{}, payload uint64) error {
	first := int(min(payload, uint64(p.chunk)))
	return p.sleepUntil(context.Background(), done, p.book(wire.HeaderSize, wire.HeaderSize+first))
}

func (p *pacer) sleepUntil(ctx context.Context, done <-chan struct{}, t time.Time) error {
	if p.clk != nil {
		return p.clk.sleepUntil(ctx, done, t)
	}
	return sleepUntil(ctx, done, t)
}

// Go's timers wake up to a millisecond late on Linux when the process is
// otherwise idle (the runtime's poller waits in whole milliseconds), which
// would turn a 50µs link into a 1ms one and stretch every short
// serialization. So waits up to coarseAbove sleep in nanosleep(2), which
// first cuts the thread's timer slack from the kernel's 50µs to 1µs and is
// asked for timerSlack less than the wait. Longer waits use a Go timer,
// which ctx and done can interrupt, for all but their last stretch.
const (
	timerSlack  = 5 * time.Microsecond // nanosleep sets the thread's slack to 1µs
	coarseAbove = 20 * time.Millisecond
)

// sleepUntil sleeps until about t, or until ctx or done ends (checked at
// least every coarseAbove). A wait shorter than the timer slack is skipped:
// a pacer's schedule still counts it, so the next wait is that much longer
// and the rate holds.
func sleepUntil(ctx context.Context, done <-chan struct{}, t time.Time) error {
	for {
		d := time.Until(t)
		if d <= timerSlack {
			return nil
		}
		if d <= coarseAbove {
			if err := ctx.Err(); err != nil {
				return err
			}
			select {
			case <-done:
				return collective.ErrClosed
			default:
			}
			nanosleep(d - timerSlack)
			return nil
		}
		tm := time.NewTimer(d - coarseAbove/2)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		case <-done:
			tm.Stop()
			return collective.ErrClosed
		}
	}
}

// sleepUntilExactly is sleepUntil that never returns before t (unless done
// ends): a delay line has no schedule to carry a skipped wait, so the last
// stretch, under the timer slack, is slept too. It is not spun: with more
// processes than cores (8 ranks on 2), a spinning delay line takes the core
// the peer it waits for needs, and a 25µs link measured 2.7ms a step.
func sleepUntilExactly(done <-chan struct{}, t time.Time) {
	if sleepUntil(context.Background(), done, t) != nil {
		return
	}
	if d := time.Until(t); d > 0 {
		nanosleep(d)
	}
}
