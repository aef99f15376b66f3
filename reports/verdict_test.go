package reports

import (
	"math"
	"testing"
)

func TestVerdictRunPhrase(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name      string
		r         verdictRun
		crossover string
		want      string
	}{
		{
			name: "one cell with its interval",
			r:    verdictRun{label: "tree", from: 64 << 10, to: 64 << 10, cells: 1, lo: 0.10, hi: 0.10, ciLo: 0.07, ciHi: 0.13},
			want: "**tree** fastest at 64KiB, by 10% (95% CI 7–13%)",
		},
		{
			name: "a range: the bounds of its cells' intervals",
			r:    verdictRun{label: "tree", from: 1 << 10, to: 8 << 10, cells: 2, lo: 0.242, hi: 0.292, ciLo: 0.204, ciHi: 0.314},
			want: "**tree** fastest at 1KiB–8KiB, by 24–29% (95% CIs within 20–31%)",
		},
		{
			name:      "after a crossover: one parenthesis",
			r:         verdictRun{label: "ring", from: 512 << 10, to: 512 << 10, cells: 1, lo: 0.27, hi: 0.27, ciLo: 0.24, ciHi: 0.29},
			crossover: "crossover from tree between 64KiB and 512KiB",
			want:      "**ring** fastest at 512KiB, by 27% (95% CI 24–29%; crossover from tree between 64KiB and 512KiB)",
		},
		{
			name: "an interval across zero reads as one",
			r:    verdictRun{label: "ring", from: 1 << 10, to: 1 << 10, cells: 1, lo: 0.06, hi: 0.06, ciLo: -0.021, ciHi: 0.12},
			want: "**ring** fastest at 1KiB, by 6% (95% CI −2% to 12%)",
		},
		{
			name: "no samples: the margin alone",
			r:    verdictRun{label: "ring", from: 1 << 10, to: 8 << 10, cells: 2, lo: 0.17, hi: 0.2, ciLo: nan, ciHi: nan},
			want: "**ring** fastest at 1KiB–8KiB, by 17–20%",
		},
		{
			name: "a tie prints no margin and no interval",
			r:    verdictRun{tie: "ring ≈ tree", from: 64 << 10, to: 64 << 10, cells: 1, lo: 0.02, hi: 0.02, ciLo: -0.03, ciHi: 0.07},
			want: "ring ≈ tree at 64KiB: a tie, inside the noise",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.phrase(tt.crossover); got != tt.want {
				t.Errorf("phrase() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVerdictRunAdd: a run's interval bounds all its cells, and one cell
// without an interval leaves the run without one.
func TestVerdictRunAdd(t *testing.T) {
	r := newVerdictRun("ring", "", winner{bytes: 1 << 10, margin: 0.2, marginLo: 0.15, marginHi: 0.25})
	r.add(winner{bytes: 8 << 10, margin: 0.3, marginLo: 0.22, marginHi: 0.4})
	if r.cells != 2 || r.to != 8<<10 || r.lo != 0.2 || r.hi != 0.3 || r.ciLo != 0.15 || r.ciHi != 0.4 {
		t.Errorf("after add: %+v", r)
	}
	r.add(winner{bytes: 64 << 10, margin: 0.25, marginLo: math.NaN(), marginHi: math.NaN()})
	if !math.IsNaN(r.ciLo) || !math.IsNaN(r.ciHi) {
		t.Errorf("a cell without an interval: run interval [%v, %v], want NaN", r.ciLo, r.ciHi)
	}
}
