package transport

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
)

// Link models a cluster node's network interface: a rate shared by all of a
// process's links in each direction, and a one-way latency per link.
//
// Over TCP (TCPOptions.Link), each process paces what it sends through an
// egress token bucket at Rate and what it reads through an ingress bucket at
// Rate, both shared by all its connections, so one sender talking to three
// peers gets Rate in all, as does a receiver that three peers talk to. A
// message becomes visible to its receiver Latency after its last byte has
// been read, that is no earlier than send time + serialization at Rate +
// Latency. Latency is a delay line, not a stop-and-wait: a link keeps Rate
// whatever its latency.
//
// The zero Link shapes nothing.
type Link struct {
	// Rate is the NIC's rate in bits per second, each way; 0 means unlimited.
	Rate int64
	// Latency is the one-way delay of every link; 0 means none.
	Latency time.Duration
}

// linkPresets are the names ParseLink accepts for common networks. The NIC
// presets' latencies are typical one-way figures inside a data-centre rack.
var linkPresets = map[string]Link{
	"1g":   {Rate: 1e9, Latency: 50 * time.Microsecond},
	"10g":  {Rate: 10e9, Latency: 20 * time.Microsecond},
	"25g":  {Rate: 25e9, Latency: 10 * time.Microsecond},
	"100g": {Rate: 100e9, Latency: 5 * time.Microsecond},
	"lan":  {Rate: 10e9, Latency: 50 * time.Microsecond},
	"wan":  {Rate: 1e9, Latency: 10 * time.Millisecond},
}

// LinkPresets returns the preset names ParseLink accepts, sorted.
func LinkPresets() []string {
	names := make([]string, 0, len(linkPresets))
	for n := range linkPresets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var rateUnits = []struct {
	name  string
	scale int64
}{
	{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
	{"tbps", 1e12}, {"gbps", 1e9}, {"mbps", 1e6}, {"kbps", 1e3}, {"bps", 1},
}

func linkSyntax() string {
	return "accepted: RATE, RATE,LATENCY or PRESET[,LATENCY]; RATE is a number with bit, kbit, Mbit, Gbit or Tbit " +
		"(bits per second, also written bps, Mbps, Gbps), or unlimited; LATENCY is a Go duration such as 25us or 10ms; " +
		"PRESET is one of " + strings.Join(LinkPresets(), ", ") + "; none means no shaping"
}

// ParseLink parses a link specification: "10Gbit,25us", "1Gbit",
// "800Mbit,50us", "unlimited,5ms", a preset ("1g", "10g", "25g", "100g",
// "lan", "wan"), a preset with its latency replaced ("10g,1ms"), or "none".
// Case does not matter. Link.String gives the canonical form back.
func ParseLink(s string) (Link, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	if in == "" || in == "none" {
		return Link{}, nil
	}
	rateText, latText, hasLat := strings.Cut(in, ",")
	rateText, latText = strings.TrimSpace(rateText), strings.TrimSpace(latText)
	var l Link
	if p, ok := linkPresets[rateText]; ok {
		l = p
	} else {
		r, err := parseRate(rateText)
		if err != nil {
			return Link{}, fmt.Errorf("transport: link %q: %v (%s)", s, err, linkSyntax())
		}
		l.Rate = r
	}
	if hasLat {
		d, err := time.ParseDuration(latText)
		if err != nil || d < 0 {
			return Link{}, fmt.Errorf("transport: link %q: bad latency %q (%s)", s, latText, linkSyntax())
		}
		l.Latency = d
	}
	return l, nil
}

func parseRate(s string) (int64, error) {
	if s == "unlimited" || s == "inf" {
		return 0, nil
	}
	for _, u := range rateUnits {
		num, ok := strings.CutSuffix(s, u.name)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v*float64(u.scale) > math.MaxInt64/2 {
			return 0, fmt.Errorf("bad rate %q", s)
		}
		bits := int64(math.Round(v * float64(u.scale)))
		if bits < 1 {
			return 0, fmt.Errorf("rate %q is under 1 bit/s", s)
		}
		return bits, nil
	}
	return 0, fmt.Errorf("rate %q has no unit", s)
}

// String returns the canonical form, which ParseLink reads back: "10Gbit,25us",
// "800Mbit", "unlimited,5ms", or "none" for the zero Link.
func (l Link) String() string {
	if l == (Link{}) {
		return "none"
	}
	rate := "unlimited"
	if l.Rate > 0 {
		rate = strconv.FormatInt(l.Rate, 10) + "bit"
		for _, u := range []struct {
			name  string
			scale int64
		}{{"Tbit", 1e12}, {"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}} {
			if l.Rate%u.scale == 0 {
				rate = strconv.FormatInt(l.Rate/u.scale, 10) + u.name
				break
			}
		}
	}
	if l.Latency == 0 {
		return rate
	}
	return rate + "," + strings.ReplaceAll(l.Latency.String(), "µs", "us")
}

// Validate checks that the link is one ParseLink could have produced.
func (l Link) Validate() error {
	if l.Rate < 0 || l.Latency < 0 {
		return fmt.Errorf("transport: link with negative rate %d or latency %v", l.Rate, l.Latency)
	}
	return nil
}

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
