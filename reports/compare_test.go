package reports

import (
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/golden"
	"github.com/distbench/distbench/results"
)

// change alters the synthetic run for one point; slowdown multiplies its
// time (1.25 is a 20% bandwidth drop).
type change struct {
	strategy string
	np       int
	bytes    int64
	slowdown float64
	drop     bool   // leave the point out
	fail     string // record it as failed
}

func (c change) matches(m model, np int, b int64) bool {
	return c.strategy == m.strategy && (c.np == 0 || c.np == np) && (c.bytes == 0 || c.bytes == b)
}

var (
	cmpSizes = []int64{64 << 10, 1 << 20, 8 << 20}
	cmpNPs   = []int{2, 4}
)

// writeCmpRun writes a finished allreduce sweep of ring and tree with n
// samples a point, drawing its noise from seed.
func writeCmpRun(t testing.TB, dir string, seed uint64, n int, changes ...change) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	w, err := results.NewWriter(dir, synthEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models[:2] {
		for _, np := range cmpNPs {
			for _, b := range cmpSizes {
				slow, drop, fail := 1.0, false, ""
				for _, c := range changes {
					if c.matches(m, np, b) {
						if c.slowdown != 0 {
							slow = c.slowdown
						}
						drop, fail = drop || c.drop, c.fail
					}
				}
				r := measure(rng, m, "allreduce", np, b, n, slow)
				if drop {
					continue
				}
				if fail != "" {
					r.Error, r.SamplesUs = fail, nil
				}
				if err := w.Write(&r); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestCompare(t *testing.T) {
	const nPoints = 12
	tests := []struct {
		name    string
		n       int // samples per point
		changes []change
		opts    CompareOptions
		// want maps "strategy/np/bytes" to a verdict.
		want        map[string]Verdict
		others      Verdict // verdict of unlisted points; "" means "~"
		regressions int
	}{
		{name: "same build, noise only", n: 25},
		{name: "same build, many samples", n: 200},
		{
			name: "20% bandwidth drop at one point", n: 25,
			changes:     []change{{strategy: "ring", np: 4, bytes: 1 << 20, slowdown: 1.25}},
			want:        map[string]Verdict{"ring/4/1048576": Worse},
			regressions: 1,
		},
		{
			name: "20% bandwidth drop everywhere", n: 25,
			changes:     []change{{strategy: "ring", slowdown: 1.25}, {strategy: "tree", slowdown: 1.25}},
			others:      Worse,
			regressions: nPoints,
		},
		{
			name: "20% drop with few samples", n: 6,
			changes:     []change{{strategy: "tree", np: 2, bytes: 8 << 20, slowdown: 1.25}},
			want:        map[string]Verdict{"tree/2/8388608": Worse},
			regressions: 1,
		},
		{
			// Significant with 200 samples, but under the 5% threshold.
			name: "3% slower", n: 200,
			changes: []change{{strategy: "ring", slowdown: 1.03}},
		},
		{
			// 35% more bandwidth (26% less time): clear of the noise floor,
			// 5× the samples' robust spread (about 20% here).
			name: "35% faster", n: 25,
			changes: []change{{strategy: "tree", np: 2, slowdown: 0.74}},
			want:    map[string]Verdict{"tree/2/65536": Better, "tree/2/1048576": Better, "tree/2/8388608": Better},
		},
		{
			name: "lost and failed points", n: 25,
			changes: []change{{strategy: "ring", np: 2, bytes: 64 << 10, drop: true},
				{strategy: "tree", np: 4, bytes: 8 << 20, fail: "tree: rank 3 (127.0.0.1:5000) stalled"}},
			want: map[string]Verdict{"ring/2/65536": Missing, "tree/4/8388608": Missing},
		},
		{
			name: "lost and failed points count in CI", n: 25,
			changes: []change{{strategy: "ring", np: 2, bytes: 64 << 10, drop: true},
				{strategy: "tree", np: 4, bytes: 8 << 20, fail: "tree: rank 3 (127.0.0.1:5000) stalled"}},
			opts:        CompareOptions{Threshold: 0.05, Alpha: 0.05, MissingIsRegression: true},
			want:        map[string]Verdict{"ring/2/65536": Missing, "tree/4/8388608": Missing},
			regressions: 2,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, nw := filepath.Join(t.TempDir(), "base"), filepath.Join(t.TempDir(), "new")
			// Different seeds: the second run is a fresh draw of the noise.
			writeCmpRun(t, base, uint64(100+i), tt.n)
			writeCmpRun(t, nw, uint64(200+i), tt.n, tt.changes...)
			o := tt.opts
			if o == (CompareOptions{}) {
				o = judgeAll(DefaultCompareOptions())
			}
			c, err := Compare(base, nw, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Points) != nPoints {
				t.Fatalf("%d points, want %d", len(c.Points), nPoints)
			}
			for _, p := range c.Points {
				r := cmp.Or(p.Base, p.New)
				var key string
				if r != nil {
					key = strings.Join([]string{r.Strategy, strconv.Itoa(r.NP), strconv.Itoa(int(r.Bytes))}, "/")
				} else {
					key = strings.Join(strings.Split(p.Key, "/")[1:4], "/")
					key = strings.NewReplacer("np=", "", "bytes=", "").Replace(key)
				}
				want := Same
				if tt.others != "" {
					want = tt.others
				}
				if v, ok := tt.want[key]; ok {
					want = v
				}
				if p.Verdict != want {
					t.Errorf("%s: verdict %q (change %s, CI [%s, %s], p=%.3g, notes %v), want %q",
						key, p.Verdict, pct(p.Change), pct(p.ChangeLo), pct(p.ChangeHi), p.P, p.Notes, want)
				}
			}
			if got := len(c.Regressions()); got != tt.regressions {
				t.Errorf("%d regressions, want %d", got, tt.regressions)
			}
		})
	}
}

func TestCompareGolden(t *testing.T) {
	goldenPath, err := filepath.Abs(filepath.Join("testdata", "compare.md.golden"))
	if err != nil {
		t.Fatal(err)
	}
	// Relative run directories, as a user types them, keep the report's
	// title the same wherever the test runs.
	t.Chdir(t.TempDir())
	writeCmpRun(t, "base", 11, 25)
	writeCmpRun(t, "new", 12, 25,
		change{strategy: "ring", np: 4, bytes: 1 << 20, slowdown: 1.25},
		change{strategy: "tree", np: 2, bytes: 8 << 20, slowdown: 0.75},
		change{strategy: "tree", np: 4, bytes: 64 << 10, fail: "tree: allreduce #3: rank 2 (10.0.0.3:41234) closed the connection"},
	)
	c, err := Compare("base", "new", DefaultCompareOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Regressions()); got != 1 {
		t.Errorf("%d regressions, want 1", got)
	}
	if err := c.WriteReport("new"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("new", CompareFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, goldenPath, got, *update)
	checkImages(t, "new", got)

	// verdict.json, the same comparison for machines.
	if err := c.WriteVerdict("new", false); err != nil {
		t.Fatal(err)
	}
	got, err = os.ReadFile(filepath.Join("new", VerdictFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(filepath.Dir(goldenPath), "verdict.json.golden"), got, *update)
	var doc VerdictDoc
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != VerdictSchema || doc.Outcome != OutcomeRegression || doc.ExitCode != 1 || doc.Counts.Regressions != 1 ||
		len(doc.Regressions) != 1 || doc.Regressions[0].Verdict != "worse" || len(doc.Points) != len(c.Points) {
		t.Errorf("verdict.json: schema %q outcome %q exit %d, %d regressions listed of %d counted, %d points; want %s, regression, 1, 1 of 1, %d",
			doc.Schema, doc.Outcome, doc.ExitCode, len(doc.Regressions), doc.Counts.Regressions, len(doc.Points), VerdictSchema, len(c.Points))
	}
}

// TestVerdictOutcome: the outcome and exit status of each kind of
// comparison, and an interrupted A/B run's.
func TestVerdictOutcome(t *testing.T) {
	tests := []struct {
		name        string
		points      []PointComparison
		interrupted bool
		outcome     string
		code        int
	}{
		{"pass", []PointComparison{{Verdict: Same}, {Verdict: Better}}, false, OutcomePass, 0},
		{"too noisy", []PointComparison{{Verdict: Same}, {Verdict: TooNoisy}}, false, OutcomeTooNoisy, 3},
		{"regression beats too noisy", []PointComparison{{Verdict: Worse, Regressed: true}, {Verdict: TooNoisy}}, false, OutcomeRegression, 1},
		{"interrupted", []PointComparison{{Verdict: Same}}, true, OutcomeInterrupted, 130},
	}
	for _, tt := range tests {
		c := &Comparison{Points: tt.points, Options: DefaultCompareOptions()}
		d := c.Verdict(tt.interrupted)
		if d.Outcome != tt.outcome || d.ExitCode != tt.code {
			t.Errorf("%s: outcome %q exit %d, want %q %d", tt.name, d.Outcome, d.ExitCode, tt.outcome, tt.code)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	dir := t.TempDir()
	writeCmpRun(t, filepath.Join(dir, "ok"), 1, 5)
	tests := []struct {
		name      string
		base, new string
		o         CompareOptions
		want      string
	}{
		{"no base", filepath.Join(dir, "nope"), filepath.Join(dir, "ok"), DefaultCompareOptions(), "base"},
		{"no new", filepath.Join(dir, "ok"), filepath.Join(dir, "nope"), DefaultCompareOptions(), "new"},
		{"bad alpha", filepath.Join(dir, "ok"), filepath.Join(dir, "ok"), CompareOptions{Alpha: 2}, "alpha"},
		{"bad threshold", filepath.Join(dir, "ok"), filepath.Join(dir, "ok"), CompareOptions{Threshold: -1}, "threshold"},
	}
	for _, tt := range tests {
		if _, err := Compare(tt.base, tt.new, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tt.name, err, tt.want)
		}
	}
}

// judgeAll turns CompareOptions.MaxGate off, for the tests of the noise
// rules themselves: they ask what each point's verdict is at its gate,
// however high the noise raised it.
func judgeAll(o CompareOptions) CompareOptions {
	o.MaxGate = -1
	return o
}
