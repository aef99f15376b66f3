package reports

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// roundsRun describes a synthetic run in rounds: per point, per round, a
// slowdown (1 is none); a missing round is a slowdown of 0.
type roundsRun struct {
	rounds int
	// slow maps "strategy/np/bytes" to each round's slowdown; points not
	// listed are 1 in every round.
	slow map[string][]float64
	// finished: false leaves the run interrupted.
	unfinished bool
	// launchNoise, if set, slows every point's every round by a further
	// 1 + launchNoise×|N(0,1)|: the launch-to-launch variation of a shared
	// machine, which the samples of one launch do not show.
	launchNoise float64
}

// writeRoundsRun writes an allreduce sweep of ring and tree in rounds, as a
// sweep would: round 1 of every point, then round 2, ..., n samples a round.
func writeRoundsRun(t testing.TB, dir string, seed uint64, n int, rr roundsRun) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	w, err := results.NewWriter(dir, synthEnv)
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= rr.rounds; round++ {
		for _, m := range models[:2] {
			for _, np := range cmpNPs {
				for _, b := range cmpSizes {
					slow := 1.0
					if s, ok := rr.slow[cmpKey(m.strategy, np, b)]; ok {
						slow = s[round-1]
					}
					if slow == 0 {
						continue
					}
					if rr.launchNoise > 0 {
						slow *= 1 + rr.launchNoise*math.Abs(rng.NormFloat64())
					}
					r := measure(rng, m, "allreduce", np, b, n, slow)
					r.Round, r.Rounds = round, rr.rounds
					if err := w.Write(&r); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if rr.unfinished {
		w.Close()
		return
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

func cmpKey(strategy string, np int, bytes int64) string {
	return strings.Join([]string{strategy, strconv.Itoa(np), strconv.FormatInt(bytes, 10)}, "/")
}

// TestCompareRounds: a point wholly slow in one round of three, the way a
// burst of load on a shared machine makes it, is not a regression, while
// the same point slow in every round is; runs in one round keep today's
// rule, under which the burst is a regression.
func TestCompareRounds(t *testing.T) {
	const point = "ring/4/1048576"
	tests := []struct {
		name        string
		base, new   roundsRun
		want        Verdict
		regressions int
		note        string // in the point's notes
	}{
		{
			name: "one slow round of three in the new run",
			base: roundsRun{rounds: 3},
			new:  roundsRun{rounds: 3, slow: map[string][]float64{point: {1, 1.98, 1}}},
			want: Same,
		},
		{
			name: "a 6.6x slower round, as seen on the shared machine",
			base: roundsRun{rounds: 3},
			new:  roundsRun{rounds: 3, slow: map[string][]float64{point: {1, 1, 6.63}}},
			want: Same,
		},
		{
			name: "one slow round of three in the base run",
			base: roundsRun{rounds: 3, slow: map[string][]float64{point: {2, 1, 1}}},
			new:  roundsRun{rounds: 3},
			want: Same,
		},
		{
			name:        "25% slower in every round",
			base:        roundsRun{rounds: 3},
			new:         roundsRun{rounds: 3, slow: map[string][]float64{point: {1.25, 1.25, 1.25}}},
			want:        Worse,
			regressions: 1,
		},
		{
			name:        "25% slower in every round, and a burst in one of them",
			base:        roundsRun{rounds: 3},
			new:         roundsRun{rounds: 3, slow: map[string][]float64{point: {1.25, 2.5, 1.25}}},
			want:        Worse,
			regressions: 1,
		},
		{
			name:        "25% slower in every round, a burst in one round of the base",
			base:        roundsRun{rounds: 3, slow: map[string][]float64{point: {1, 1, 2}}},
			new:         roundsRun{rounds: 3, slow: map[string][]float64{point: {1.25, 1.25, 1.25}}},
			want:        Worse,
			regressions: 1,
		},
		{
			name: "35% faster in every round",
			base: roundsRun{rounds: 3},
			new:  roundsRun{rounds: 3, slow: map[string][]float64{point: {0.74, 0.74, 0.74}}},
			want: Better,
		},
		{
			// Today's rule, kept for runs in one round: the whole point
			// slow in one run is all it can see.
			name:        "single-round runs: a wholly slow point is a regression",
			base:        roundsRun{rounds: 1},
			new:         roundsRun{rounds: 1, slow: map[string][]float64{point: {1.98}}},
			want:        Worse,
			regressions: 1,
		},
		{
			// Two rounds are too few to outvote a slow one: the pooled rule.
			name:        "an interrupted run with two of three rounds falls back to the pooled rule",
			base:        roundsRun{rounds: 3},
			new:         roundsRun{rounds: 3, unfinished: true, slow: map[string][]float64{point: {1.4, 1.4, 0}}},
			want:        Worse,
			regressions: 1,
			note:        "new run: 2 of 3 rounds (incomplete)",
		},
		{
			// Seen twice in 20 same-build trials: a burst long
			// enough to span two rounds.
			name: "two slow rounds of three in the new run",
			base: roundsRun{rounds: 3},
			new:  roundsRun{rounds: 3, slow: map[string][]float64{point: {1.1, 1.9, 1.9}}},
			want: Same,
		},
		{
			// Seen twice in 20 same-build trials: points 36% and
			// 73% slower in every round of one run, on a machine
			// whose launches varied by about 15% throughout.
			name: "36% slower in every round, on a machine whose launches vary by 15%",
			base: roundsRun{rounds: 3, launchNoise: 0.15},
			new:  roundsRun{rounds: 3, launchNoise: 0.15, slow: map[string][]float64{point: {1.36, 1.36, 1.36}}},
			want: Same,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, nw := filepath.Join(t.TempDir(), "base"), filepath.Join(t.TempDir(), "new")
			n := 7 // 20 iterations in 3 rounds
			if tt.base.rounds == 1 {
				n = 20
			}
			writeRoundsRun(t, base, uint64(300+i), n, tt.base)
			writeRoundsRun(t, nw, uint64(400+i), n, tt.new)
			c, err := Compare(base, nw, judgeAll(DefaultCompareOptions()))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Points) != 12 {
				t.Fatalf("%d points, want 12", len(c.Points))
			}
			for _, p := range c.Points {
				key := cmpKey(p.Base.Strategy, p.Base.NP, p.Base.Bytes)
				want := Same
				if key == point {
					want = tt.want
					if tt.note != "" && !strings.Contains(strings.Join(p.Notes, "; "), tt.note) {
						t.Errorf("%s: notes %q lack %q", key, p.Notes, tt.note)
					}
					if wantRounds := min(tt.base.rounds, 3); p.BaseRounds != wantRounds && tt.base.rounds > 1 {
						t.Errorf("%s: %d base rounds, want %d", key, p.BaseRounds, wantRounds)
					}
				}
				if p.Verdict != want {
					t.Errorf("%s: verdict %q (change %s, round change %s, threshold %s, p=%.3g, notes %v), want %q",
						key, p.Verdict, pct(p.Change), pct(p.RoundChange), pct(p.Threshold), p.P, p.Notes, want)
				}
			}
			if got := len(c.Regressions()); got != tt.regressions {
				t.Errorf("%d regressions, want %d", got, tt.regressions)
			}
		})
	}
}

// TestRoundRule: a change of the pooled samples' median that the rounds do
// not share, here because one slow round holds most of the samples, does
// not count; one that every round shares does.
func TestRoundRule(t *testing.T) {
	rec := func(rounds ...[]float64) *results.Record {
		r := &results.Record{Kind: results.KindCollective, Point: "p", Collective: "allreduce", NP: 2, Bytes: 1 << 20,
			Rounds: len(rounds)}
		var all []float64
		for _, xs := range rounds {
			all = append(all, xs...)
			r.RoundMediansUs = append(r.RoundMediansUs, stats.Median(xs))
			r.RoundSampleCounts = append(r.RoundSampleCounts, len(xs))
		}
		if err := results.Fill(r, all); err != nil {
			t.Fatal(err)
		}
		return r
	}
	around := func(center float64, n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = center * (1 + 0.002*float64(i%5-2))
		}
		return xs
	}
	base := rec(around(100, 7), around(100, 7), around(100, 7))
	tests := []struct {
		name string
		new  *results.Record
		want Verdict
		note string
	}{
		{"one slow round with most of the samples", rec(around(100, 3), around(200, 20), around(100, 3)), Same, "does not hold across rounds (median of round medians +0.0%, fastest round +0.0%)"},
		{"every round slower", rec(around(120, 7), around(121, 7), around(119, 7)), Worse, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := comparePoint("p", &indexed{ok: base}, &indexed{ok: tt.new}, DefaultCompareOptions(), 0)
			if pc.Verdict != tt.want || !strings.Contains(strings.Join(pc.Notes, "; "), tt.note) {
				t.Errorf("verdict %q (change %s, round change %s, threshold %s, p %.3g), notes %q; want %q, %q",
					pc.Verdict, pct(pc.Change), pct(pc.RoundChange), pct(pc.Threshold), pc.P, pc.Notes, tt.want, tt.note)
			}
		})
	}
}

// TestCompareRoundsReport: compare.md shows the rounds, and report.md says
// how the points were measured and which lack rounds.
func TestCompareRoundsReport(t *testing.T) {
	t.Chdir(t.TempDir())
	writeRoundsRun(t, "base", 21, 7, roundsRun{rounds: 3})
	writeRoundsRun(t, "new", 22, 7, roundsRun{rounds: 3, unfinished: true,
		slow: map[string][]float64{"tree/2/65536": {1, 3, 1}, "ring/2/8388608": {1, 1, 0}}})
	c, err := Compare("base", "new", judgeAll(DefaultCompareOptions()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteReport("new"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("new", CompareFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"the change must also hold across rounds",
		" rounds ",
		" 3+3: ",
		" 3+2 |", // too few rounds in the new run for the round rule
		"new run: 2 of 3 rounds (incomplete)",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("compare.md lacks %q:\n%s", want, got)
		}
	}

	if err := Generate("new"); err != nil {
		t.Fatal(err)
	}
	rep, err := os.ReadFile(filepath.Join("new", ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**Incomplete.** 12 collective points measured in 3 rounds each (pooled)",
		"1 point(s) lack some of their rounds and are reported from the rounds they have: `allreduce/ring/np=2/bytes=8388608/float32` (2 of 3)",
	} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report.md lacks %q:\n%s", want, rep)
		}
	}
}
