package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/wire"
)

func shapedMesh(t testing.TB, size int, link linkspec.Link) *mesh {
	return newMesh(t, size, func(rank int, o *TCPOptions) { o.Link = &link })
}

// virtualClock is the shaper's time in these tests: it passes only in the
// shaper's own waits, each of which moves it at once to the wait's end. What
// a transfer measures on it is then exactly what the shaper imposed, however
// fast or loaded the machine is.
type virtualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newVirtualClock() *virtualClock {
	return &virtualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *virtualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *virtualClock) sleepUntil(ctx context.Context, done <-chan struct{}, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-done:
		return collective.ErrClosed
	default:
	}
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t
	}
	c.mu.Unlock()
	return nil
}

func (c *virtualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// virtualMesh is a shaped mesh on virtual clocks, one per rank unless
// shared: a rank's pacers and delay lines share its clock, as a process's
// goroutines share its time. Heartbeats, which real time drives, are off.
func virtualMesh(t *testing.T, size int, link linkspec.Link, shared bool) (*mesh, []*virtualClock) {
	clocks := make([]*virtualClock, size)
	for r := range clocks {
		if r == 0 || !shared {
			clocks[r] = newVirtualClock()
		} else {
			clocks[r] = clocks[0]
		}
	}
	m := newMesh(t, size, func(rank int, o *TCPOptions) {
		o.Link, o.clock, o.HeartbeatInterval = &link, clocks[rank], -1
	})
	return m, clocks
}

// serialization is how long n bytes take at rate bits per second.
func serialization(n int, rate int64) time.Duration {
	return time.Duration(float64(n) * 8 / float64(rate) * 1e9)
}

// transfer sends total bytes in 1 MiB messages from each src to each of its
// dsts, all at once, and returns when every byte has been received, and how
// long that took in real time.
func transfer(t testing.TB, m *mesh, flows [][2]int, total int) time.Duration {
	t.Helper()
	const msg = 1 << 20
	ctx := ctxFor(t, 5*time.Minute)
	buf := make([]byte, msg)
	var wg sync.WaitGroup
	start := time.Now()
	for _, f := range flows {
		src, dst := f[0], f[1]
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range total / msg {
				if err := m.ts[src].Send(ctx, dst, 1, buf); err != nil {
					t.Errorf("Send %d→%d: %v", src, dst, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			got := make([]byte, msg)
			for range total / msg {
				if err := m.ts[dst].Recv(ctx, src, 1, got); err != nil {
					t.Errorf("Recv %d←%d: %v", dst, src, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// Rate and sharing, on virtual time: a rank's shaper holds what it sends, to
// one peer or several, and what it receives, from one or several, to the
// link's rate, to the nanosecond. Frames count their 64-byte headers.
func TestShapedRate(t *testing.T) {
	const msg = 1 << 20
	frame := wire.HeaderSize + msg
	tests := []struct {
		name  string
		link  linkspec.Link
		flows [][2]int
		each  int // bytes per flow
		// The rank whose clock is read, and what it must read: the
		// frames it sends (or receives) at the rate, less early, the
		// first piece a receiver reads, which arrived paced.
		rank  int
		bytes int
		early int
	}{
		{"one flow keeps the rate whatever the latency", linkspec.Link{Rate: 400e6, Latency: 2 * time.Millisecond},
			[][2]int{{0, 1}}, 24 * msg, 0, 24 * frame, 0},
		{"fan-out shares egress", linkspec.Link{Rate: 300e6, Latency: time.Millisecond},
			[][2]int{{0, 1}, {0, 2}, {0, 3}}, 6 * msg, 0, 18 * frame, 0},
		// No latency: on a virtual clock, a delay line's wait would
		// move the receiver's time as if its NIC had been idle.
		{"fan-in shares ingress", linkspec.Link{Rate: 300e6},
			[][2]int{{1, 0}, {2, 0}, {3, 0}}, 6 * msg, 0, 18 * frame, wire.HeaderSize + newPacer(300e6, nil).chunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := 0
			for _, f := range tt.flows {
				size = max(size, f[0]+1, f[1]+1)
			}
			m, clocks := virtualMesh(t, size, tt.link, false)
			start := clocks[tt.rank].now()
			transfer(t, m, tt.flows, tt.each)
			got := clocks[tt.rank].now().Sub(start)
			want := serialization(tt.bytes-tt.early, tt.link.Rate)
			t.Logf("rank %d: %v on its virtual clock, want %v (%.1f Mbit/s, set %v)", tt.rank, got, want,
				float64(tt.bytes)*8/got.Seconds()/1e6, tt.link)
			// Each slot is rounded down to the nanosecond.
			if d := got - want; d < -2*time.Microsecond || d > 2*time.Microsecond {
				t.Errorf("rank %d's shaper took %v, want %v", tt.rank, got, want)
			}
		})
	}
}

// Latency, on virtual time: a message becomes visible the link's latency
// after its last byte has been serialized, once: a receiver passes at once
// bytes that arrived at the rate. One clock serves both ranks, whose turns
// alternate; a message is paced in one piece (a longer one would have the
// sender's next wait move the clock before the receiver reads the piece
// before it, which a virtual clock cannot tell from a slower link).
func TestShapedLatency(t *testing.T) {
	link := linkspec.Link{Rate: 400e6, Latency: 5 * time.Millisecond}
	for _, size := range []int{8, newPacer(link.Rate, nil).chunk} {
		t.Run(fmt.Sprintf("%dB", size), func(t *testing.T) {
			m, clocks := virtualMesh(t, 2, link, true)
			ctx := ctxFor(t, time.Minute)
			const rounds = 5
			echoed := make(chan error, 1)
			go func() {
				b := make([]byte, size)
				for range rounds {
					if err := m.ts[1].Recv(ctx, 0, 1, b); err != nil {
						echoed <- err
						return
					}
					if err := m.ts[1].Send(ctx, 0, 2, b); err != nil {
						echoed <- err
						return
					}
				}
				echoed <- nil
			}()
			b := make([]byte, size)
			want := serialization(wire.HeaderSize+size, link.Rate) + link.Latency
			for i := range rounds {
				start := clocks[0].now()
				if err := m.ts[0].Send(ctx, 1, 1, b); err != nil {
					t.Fatal(err)
				}
				if err := m.ts[0].Recv(ctx, 1, 2, b); err != nil {
					t.Fatal(err)
				}
				oneWay := clocks[0].now().Sub(start) / 2
				if d := oneWay - want; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("round %d: one way took %v, want %v (serialization of the frame, then %v)", i, oneWay, want, link.Latency)
				}
				clocks[0].advance(time.Second) // idle between rounds
			}
			if err := <-echoed; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// On the real clock, a shaped link is never faster than its rate, however
// the machine runs: sleeps end late, never early, and a pacer that fell
// behind catches up no further than its schedule. A receiver's schedule
// may start up to a first piece in the past. (Real-time figures, which a
// loaded machine lowers, are BenchmarkShapedRate's.)
func TestShapedNeverFaster(t *testing.T) {
	const msg, each = 1 << 20, 6 << 20
	link := linkspec.Link{Rate: 300e6, Latency: time.Millisecond}
	for _, tt := range []struct {
		name  string
		flows [][2]int
	}{
		{"one flow", [][2]int{{0, 1}}},
		{"fan-out", [][2]int{{0, 1}, {0, 2}, {0, 3}}},
		{"fan-in", [][2]int{{1, 0}, {2, 0}, {3, 0}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := shapedMesh(t, 4, link)
			el := transfer(t, m, tt.flows, each)
			bytes := len(tt.flows) * each / msg * (wire.HeaderSize + msg)
			floor := serialization(bytes-wire.HeaderSize-m.ts[0].chunk, link.Rate)
			t.Logf("%d bytes in %v: %.0f Mbit/s (set %v)", bytes, el, float64(bytes)*8/el.Seconds()/1e6, link)
			if el < floor {
				t.Errorf("%d bytes went in %v, under the %v the rate allows", bytes, el, floor)
			}
		})
	}
}

// Below a millisecond, a delay cannot be timed to 10% on a loaded machine
// (the host's own loopback latency is tens of microseconds), but it is
// never cut short: no message arrives before the link's latency has passed.
func TestShapedLatencyFloor(t *testing.T) {
	link, err := linkspec.ParseLink("lan") // 10Gbit, 50µs
	if err != nil {
		t.Fatal(err)
	}
	m := shapedMesh(t, 2, link)
	ctx := ctxFor(t, 10*time.Second)
	const rounds = 50
	go func() {
		b := make([]byte, 8)
		for range rounds {
			if m.ts[1].Recv(ctx, 0, 1, b) != nil || m.ts[1].Send(ctx, 0, 2, b) != nil {
				return
			}
		}
	}()
	b := make([]byte, 8)
	shortest := time.Hour
	for range rounds {
		start := time.Now()
		if err := m.ts[0].Send(ctx, 1, 1, b); err != nil {
			t.Fatal(err)
		}
		if err := m.ts[0].Recv(ctx, 1, 2, b); err != nil {
			t.Fatal(err)
		}
		shortest = min(shortest, time.Since(start))
	}
	t.Logf("shortest round trip %v (set %v each way)", shortest, link)
	if shortest < 2*link.Latency {
		t.Errorf("a round trip took %v, under twice the %v latency", shortest, link.Latency)
	}
}

// BenchmarkShapedRate reports the rate shaped links reach on the real clock,
// in Mbit/s of frames, against their setting: one flow, one sender to three
// peers, three senders to one receiver.
func BenchmarkShapedRate(b *testing.B) {
	const msg = 1 << 20
	link := linkspec.Link{Rate: 400e6, Latency: 2 * time.Millisecond}
	for _, bb := range []struct {
		name  string
		flows [][2]int
	}{
		{"one-flow", [][2]int{{0, 1}}},
		{"fan-out", [][2]int{{0, 1}, {0, 2}, {0, 3}}},
		{"fan-in", [][2]int{{1, 0}, {2, 0}, {3, 0}}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			m := shapedMesh(b, 4, link)
			transfer(b, m, bb.flows, msg) // warm up: connections, buffers
			b.ResetTimer()
			el := transfer(b, m, bb.flows, b.N*msg)
			bits := float64(len(bb.flows)*b.N*(wire.HeaderSize+msg)) * 8
			b.ReportMetric(bits/el.Seconds()/1e6, "Mbit/s")
			b.ReportMetric(bits/el.Seconds()/float64(link.Rate)*100, "%-of-setting")
		})
	}
}

// The pacer's schedule, step by step on a virtual clock.
func TestPacer(t *testing.T) {
	const ms = time.Millisecond
	type step struct {
		what    string
		advance time.Duration // the clock moves on by this first
		op      string        // "begin", "end", "send" or "receive" (a reserve of n bytes)
		n       int
		want    time.Duration // for a reserve: when its slot ends, from the start
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"slots are back to back", []step{
			{"", 0, "begin", 0, 0},
			{"the first slot starts now", 0, "send", 10000, 1 * ms},
			{"the next follows it", 0, "send", 10000, 2 * ms},
			{"", 0, "send", 5000, 2*ms + ms/2},
		}},
		{"a busy pacer catches up", []step{
			{"", 0, "begin", 0, 0},
			{"", 0, "send", 10000, 1 * ms},
			{"woke 4ms late: the slot is already over", 5 * ms, "send", 10000, 2 * ms},
			{"a second user keeps the NIC busy", 0, "begin", 0, 0},
			{"", 0, "end", 0, 0},
			{"", 0, "send", 10000, 3 * ms},
			{"woke 49ms late: the slot starts busySlack back", 47 * ms, "send", 10000, 52*ms - busySlack + ms},
		}},
		{"idle time is not banked", []step{
			{"", 0, "begin", 0, 0},
			{"", 0, "send", 10000, 1 * ms},
			{"", 0, "end", 0, 0},
			{"", 5 * ms, "begin", 0, 0},
			{"the next message pays in full", 0, "send", 10000, 6 * ms},
			{"", 0, "end", 0, 0},
			{"idle for under idleSlack: still in step", ms + idleSlack/2, "begin", 0, 0},
			{"", 0, "send", 10000, 7 * ms},
		}},
		{"a receiver passes paced data at once", []step{
			{"", 0, "begin", 0, 0},
			{"it arrived during its own slot", 0, "receive", 10000, 0},
			{"the next arrived paced", 1 * ms, "receive", 10000, 1 * ms},
			{"three senders at once: held to the rate", 0, "receive", 10000, 2 * ms},
			{"", 0, "receive", 10000, 3 * ms},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newVirtualClock()
			p := newPacer(80e6, c) // 10 MB/s: 100 ns a byte
			if p.chunk != 10000 {
				t.Fatalf("chunk %d, want a millisecond's worth (10000 bytes)", p.chunk)
			}
			t0 := c.now()
			for i, s := range tt.steps {
				c.advance(s.advance)
				switch s.op {
				case "begin":
					p.begin()
				case "end":
					p.end()
				default:
					if got := p.reserve(s.n, s.op == "receive").Sub(t0); got != s.want {
						t.Errorf("step %d (%s %d bytes at %v; %s): slot ends at %v, want %v", i, s.op, s.n, c.now().Sub(t0), s.what, got, s.want)
					}
				}
			}
		})
	}
}

// wait sleeps on the pacer's clock until the slot ends, and gives up when
// the transport closes or the context ends.
func TestPacerWait(t *testing.T) {
	c := newVirtualClock()
	p := newPacer(80e6, c)
	t0 := c.now()
	p.begin()
	if err := p.wait(context.Background(), nil, 10000, false); err != nil || c.now().Sub(t0) != time.Millisecond {
		t.Errorf("wait: %v, clock at %v, want 1ms", err, c.now().Sub(t0))
	}
	done := make(chan struct{})
	close(done)
	if err := p.wait(context.Background(), done, 10000, false); !errors.Is(err, collective.ErrClosed) {
		t.Errorf("wait after close: %v, want ErrClosed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.wait(ctx, nil, 10000, false); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with a cancelled context: %v, want context.Canceled", err)
	}
	p.end()
}
