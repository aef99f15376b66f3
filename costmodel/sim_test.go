package costmodel

import (
	"fmt"
	"math"
	"testing"

	"github.com/distbench/distbench/internal/core"
)

// Parameter sets of the shapes the project sweeps: 1Gbit and 10Gbit with
// 25us, and a 100Gbit,2us NIC, each with software costs of its scale.
var linkParams = []struct {
	name string
	p    Params
}{
	{"1Gbit,25us", Params{Alpha: 20e-6, Latency: 25e-6, Beta: 8e-9, Gamma: 0.3e-9}},
	{"10Gbit,25us", Params{Alpha: 20e-6, Latency: 25e-6, Beta: 0.8e-9}},
	{"100Gbit,2us", Params{Alpha: 5e-6, Latency: 2e-6, Beta: 0.08e-9, Gamma: 0.01e-9}},
}

// TestFlatAgreesWithClosedForms: on a flat topology the simulator, running
// the strategies' schedules, and the closed forms agree within 1% wherever
// the closed form is exact (docs/design/costmodel.md says where it is a bound).
func TestFlatAgreesWithClosedForms(t *testing.T) {
	cases := []struct {
		algo  string
		nps   []int
		sizes []int64
	}{
		{"ring/rsag", []int{3, 4, 8, 16, 64}, []int64{64 << 10, 1 << 20, 16 << 20}},
		{"ring/whole", []int{2, 3, 8, 16}, []int64{4 << 10, 64 << 10}},
		{"ring", []int{2, 4, 8, 16}, []int64{4 << 10, 16 << 20}},
		{"ring/broadcast", []int{2, 3, 8, 16}, []int64{4 << 10, 1 << 20, 16 << 20}},
		{"tree/rd", []int{2, 4, 8, 16, 64}, []int64{4 << 10, 64 << 10, 1 << 20}},
		{"tree/broadcast", []int{2, 3, 8, 16, 64}, []int64{4 << 10, 256 << 10}}, // one chunk
	}
	for _, sh := range linkParams {
		for _, c := range cases {
			a, err := Lookup(c.algo)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.nps {
				for _, S := range c.sizes {
					t.Run(fmt.Sprintf("%s/%s/np%d/%d", sh.name, c.algo, n, S), func(t *testing.T) {
						r, err := Simulate(a.Program(n, S), Flat(n, sh.p))
						if err != nil {
							t.Fatal(err)
						}
						closed := a.Closed(sh.p, n, S)
						if d := math.Abs(closed-r.Time) / r.Time; d > 0.01 {
							t.Errorf("closed form %.1f us, simulated %.1f us: %.2f%% apart", closed*1e6, r.Time*1e6, 100*d)
						}
					})
				}
			}
		}
	}
}

// TestStaticMatchesEvents: the rank-by-rank evaluation that the ring
// takes and the discrete-event simulation give the same times.
func TestStaticMatchesEvents(t *testing.T) {
	for _, sh := range linkParams {
		for _, n := range []int{2, 3, 5, 8, 12} {
			for _, prog := range []Program{RingRSAG(n, 1<<20, 4, 0), RingRSAG(n, 1000, 4, 64), RingWhole(n, 4096), ChainBroadcast(n, 3<<20, 4, 0, 1)} {
				topo := Flat(n, sh.p)
				if n >= 5 { // one host, oversubscribed: wake-ups too
					topo = OneHost(n, 2, sh.p)
					topo.Intra.Step, topo.Inter.Step = 30e-6, 30e-6
				}
				topo.Delay = DrawDelays(n, []float64{0, 10e-6, 50e-6}, uint64(n))
				s := newSim(prog, topo)
				a, err := s.static()
				if err != nil {
					t.Fatal(err)
				}
				e, err := newSim(prog, topo).events()
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(a.Time-e.Time) > 1e-12 || a.Messages != e.Messages {
					t.Errorf("%s np %d: static %.3f us (%d messages), events %.3f us (%d)", sh.name, n, a.Time*1e6, a.Messages, e.Time*1e6, e.Messages)
				}
			}
		}
	}
}

// TestWhatClosedFormsMiss: the effects the simulator exists for move the
// time the way they must.
func TestWhatClosedFormsMiss(t *testing.T) {
	p := linkParams[1].p
	n := 16
	base := func(a string, S int64, topo Topology) float64 {
		t.Helper()
		alg, _ := Lookup(a)
		r, err := Simulate(alg.Program(n, S), topo)
		if err != nil {
			t.Fatal(err)
		}
		return r.Time
	}
	flat := Flat(n, p)
	tests := []struct {
		name  string
		algo  string
		S     int64
		topo  func() Topology
		wantX float64 // at least this many times the flat time
	}{
		{"slow NIC", "ring", 16 << 20, func() Topology { x := flat; x.SlowNIC, x.SlowNICFactor = 3, 4; return x }, 3},
		{"slow rank", "ring", 4 << 10, func() Topology { x := flat; x.SlowRank, x.SlowRankFactor = 5, 10; return x }, 1.5},
		{"2:1 spine", "ring", 16 << 20, func() Topology { x := flat; x.Oversub = 2; return x }, 1.9},
		{"stragglers", "tree", 64 << 10, func() Topology { x := flat; x.Delay = DrawDelays(n, []float64{0, 1e-3}, 1); return x }, 1.5},
		{"incast at one server", "ps", 64 << 10, func() Topology { return flat }, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, g := base(tc.algo, tc.S, flat), base(tc.algo, tc.S, tc.topo())
			if g < tc.wantX*f {
				t.Errorf("%s: %.1f us against %.1f us flat: want at least %.1f×", tc.name, g*1e6, f*1e6, tc.wantX)
			}
		})
	}
	// A parameter server under ⌈S/partition⌉ = 1 has one server taking
	// every push: its reader, not the workers' links, sets the time.
	a, _ := Lookup("ps")
	r, err := Simulate(a.Program(n, 64<<10), flat)
	if err != nil {
		t.Fatal(err)
	}
	if incast := float64(n-1) * float64(64<<10) * p.Beta; r.Time < 2*incast {
		t.Errorf("ps np %d 64KiB: %.1f us, want at least twice the server's intake of %.1f us", n, r.Time*1e6, incast*1e6)
	}
}

// BenchmarkRing4096 is the target: a 4,096-rank ring allreduce of
// 1 GiB (2 × 4,095 steps × 4 chunks a segment) simulated in under 10 s.
//
//	go test ./costmodel -run '^$' -bench Ring -benchtime 1x
func BenchmarkRing4096(b *testing.B) {
	for _, c := range []struct {
		n     int
		chunk int
	}{{512, 0}, {1024, 0}, {2048, 0}, {4096, 0}, {4096, 128 << 10}, {4096, 32 << 10}} {
		b.Run(fmt.Sprintf("np%d/chunk%d", c.n, c.chunk), func(b *testing.B) {
			topo := Topology{Hosts: c.n / 8, PerHost: 8, Intra: Params{Alpha: 2e-6, Latency: 1e-6, Beta: 0.01e-9},
				Inter: Params{Alpha: 5e-6, Latency: 2e-6, Beta: 0.08e-9, Gamma: 0.01e-9}, Oversub: 1, SlowNIC: -1, SlowRank: -1}
			for b.Loop() {
				r, err := Simulate(RingRSAG(c.n, 1<<30, 4, c.chunk), topo)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.Messages), "messages")
				b.ReportMetric(r.Time*1e6, "sim-us")
			}
		})
	}
}

// TestTurnedRingIsTheRing: the one schedule every rank of a large ring runs
// turned (peers relative) is the schedule of each rank, spelled out.
func TestTurnedRingIsTheRing(t *testing.T) {
	const n = 12
	turned := RingRSAG(n, 3<<20, 4, 0)
	if _, ok := turned.(*ringProgram); !ok {
		t.Fatalf("np %d, equal segments: got %T, want the turned schedule", n, turned)
	}
	abs := newRanks(n)
	for r := range n {
		for _, o := range turned.Ops(r) {
			o.Rel = false
			o.Peer = int32(core.Mod(r+int(o.Peer), n))
			for i := range o.Deps[:o.NDeps] {
				o.Deps[i].Peer = int32(core.Mod(r+int(o.Deps[i].Peer), n))
			}
			abs.send(r, o)
		}
	}
	for _, sh := range linkParams {
		a, err := Simulate(turned, Flat(n, sh.p))
		if err != nil {
			t.Fatal(err)
		}
		b, err := newSim(abs, Flat(n, sh.p)).events()
		if err != nil {
			t.Fatal(err)
		}
		if a.Time != b.Time || a.Messages != b.Messages {
			t.Errorf("%s: turned %.3f us (%d messages), spelled out %.3f us (%d)", sh.name, a.Time*1e6, a.Messages, b.Time*1e6, b.Messages)
		}
	}
}
