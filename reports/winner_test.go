package reports

import (
	"testing"

	"github.com/distbench/distbench/results"
)

// TestWinnerRounds: a win measured in rounds must hold in every round. The
// pooled samples of a point one of whose rounds ran on a slowed machine
// can make a strategy look faster with intervals apart; its rounds say
// it is not.
func TestWinnerRounds(t *testing.T) {
	rec := func(strategy string, roundMedians ...float64) *results.Record {
		r := &results.Record{Kind: results.KindCollective, Collective: "allreduce", Strategy: strategy, NP: 2, Bytes: 1 << 20}
		var samples []float64
		for _, m := range roundMedians {
			samples = append(samples, m*0.99, m, m*1.01)
		}
		if err := results.Fill(r, samples); err != nil {
			t.Fatal(err)
		}
		// Intervals apart, as pooled samples can be whatever the rounds.
		r.TimeUsCILo, r.TimeUsCIHi = r.TimeUs*0.98, r.TimeUs*1.02
		r.RoundMediansUs = roundMedians
		return r
	}
	for _, tc := range []struct {
		name       string
		ring, tree []float64
		tie        bool
	}{
		{"faster in every round", []float64{100, 105, 110}, []float64{150, 160, 170}, false},
		{"one round turned around", []float64{100, 105, 300}, []float64{150, 160, 170}, true},
		{"no rounds: the intervals decide", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ring, tree := rec("ring", 100), rec("tree", 150)
			if tc.ring != nil {
				ring, tree = rec("ring", tc.ring...), rec("tree", tc.tree...)
			}
			s := &section{series: []string{"ring", "tree"}, nps: []int{2}, sizes: []int64{1 << 20}, pts: map[cellKey]*results.Record{
				{"ring", 2, 1 << 20}: ring, {"tree", 2, 1 << 20}: tree,
			}}
			w := winners(s)[[2]int64{2, 1 << 20}]
			if w.best != "ring" || w.overlap != tc.tie {
				t.Errorf("best %s, tie %v; want ring, tie %v", w.best, w.overlap, tc.tie)
			}
		})
	}
}
