package reports

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// TestNoiseFloor: a noisy point (10% spread) whose whole run drifted 20% —
// what a loaded shared machine does between two sweeps of the same build —
// is significant by the rank test but inside its own noise, so it is not a
// regression; the same 20% on a quiet point (1% spread) is. Nor is the
// noisy point "unchanged" under the default MaxGate: its gate (about 50%)
// would have hidden a 40% slowdown, and compare says so.
func TestNoiseFloor(t *testing.T) {
	tests := []struct {
		name    string
		spread  float64
		maxGate bool // CompareOptions.MaxGate at its default, not off
		want    Verdict
	}{
		{"noisy point drifts", 0.10, false, Same},
		{"quiet point slows", 0.01, false, Worse},
		{"noisy point is too noisy to judge", 0.10, true, TooNoisy},
		{"quiet point slows, gate or not", 0.01, true, Worse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			dir := t.TempDir()
			write := func(name string, center float64) string {
				d := filepath.Join(dir, name)
				w, err := results.NewWriter(d, synthEnv)
				if err != nil {
					t.Fatal(err)
				}
				samples := make([]float64, 40)
				for i := range samples {
					samples[i] = center * math.Exp(tt.spread*rng.NormFloat64())
				}
				r := &results.Record{Kind: results.KindCollective, Point: "p", Collective: "allreduce", Strategy: "ring", NP: 2,
					Bytes: 1 << 20, Count: 1 << 18, DType: "float32", Op: "sum"}
				if err := results.Fill(r, samples); err != nil {
					t.Fatal(err)
				}
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
				if err := w.Finish(); err != nil {
					t.Fatal(err)
				}
				w.Close()
				return d
			}
			o := DefaultCompareOptions()
			if !tt.maxGate {
				o = judgeAll(o)
			}
			c, err := Compare(write("base", 100), write("new", 120), o)
			if err != nil {
				t.Fatal(err)
			}
			p := c.Points[0]
			if p.P >= 0.05 {
				t.Fatalf("the rank test should find the 20%% shift significant; p = %v", p.P)
			}
			if p.Verdict != tt.want {
				t.Errorf("verdict %q (change %+.1f%%, threshold %.1f%%), want %q", p.Verdict, 100*p.Change, 100*p.Threshold, tt.want)
			}
			text := c.TooNoisyText()
			if want := "**Too noisy to judge 1 of 1 points**: their runs' noise hides any change below " +
				strings.TrimPrefix(pct(p.Threshold), "+"); (tt.want == TooNoisy) != strings.HasPrefix(text, want) {
				t.Errorf("TooNoisyText() = %q, want it to begin %q only when the point is too noisy", text, want)
			}
		})
	}
}
