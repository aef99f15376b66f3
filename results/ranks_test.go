package results_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/distbench/distbench/results"
)

// spread returns n samples around m, each off by up to ±noise (relative),
// from a fixed seed.
func spread(seed uint64, n int, m, noise float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = m * (1 + noise*(2*rng.Float64()-1))
	}
	return xs
}

func TestSlowestRank(t *testing.T) {
	sampled := func(per ...[]float64) *results.Record {
		r := &results.Record{}
		results.SetRanks(r, per, true)
		return r
	}
	medians := func(ci [2]float64, meds ...float64) *results.Record {
		return &results.Record{RankMedianUs: meds, TimeUs: (ci[0] + ci[1]) / 2, TimeUsCILo: ci[0], TimeUsCIHi: ci[1]}
	}
	tests := []struct {
		name      string
		rec       *results.Record
		rank      int
		sig       bool
		ratioNear float64 // 0: not checked
	}{
		{"no ranks", &results.Record{}, -1, false, 0},
		{"one rank", medians([2]float64{9, 11}, 10), -1, false, 0},
		{"equal ranks, low noise", sampled(spread(1, 50, 100, 0.02), spread(2, 50, 100, 0.02), spread(3, 50, 100, 0.02), spread(4, 50, 100, 0.02)), -2, false, 0},
		{"rank 3 1.5x slower, low noise", sampled(spread(1, 50, 100, 0.02), spread(2, 50, 100, 0.02), spread(3, 50, 100, 0.02), spread(4, 50, 150, 0.02)), 3, true, 1.5},
		{"rank 1 1.5x slower, of 8", sampled(spread(1, 30, 100, 0.05), spread(2, 30, 150, 0.05), spread(3, 30, 100, 0.05), spread(4, 30, 100, 0.05),
			spread(5, 30, 100, 0.05), spread(6, 30, 100, 0.05), spread(7, 30, 100, 0.05), spread(8, 30, 100, 0.05)), 1, true, 1.5},
		{"noisy ranks, 10% apart", sampled(spread(1, 20, 100, 0.8), spread(2, 20, 100, 0.8), spread(3, 20, 100, 0.8), spread(4, 20, 110, 0.8)), -2, false, 0},
		{"1.03x slower is under the minimum effect", sampled(spread(1, 200, 100, 0.001), spread(2, 200, 100, 0.001), spread(3, 200, 103, 0.001)), 2, false, 1.03},
		{"too few samples fall back on the record's interval", sampled([]float64{100, 101}, []float64{100, 101}, []float64{150, 151}), 2, false, 0},
		{"medians only, narrow interval", medians([2]float64{99, 101}, 100, 100, 150, 100), 2, true, 1.5},
		{"medians only, wide interval", medians([2]float64{60, 140}, 100, 100, 150, 100), 2, false, 1.5},
		{"medians only, no interval", &results.Record{RankMedianUs: []float64{100, 200}}, 1, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rank, ratio, sig := results.SlowestRank(tt.rec)
			if tt.rank != -2 && rank != tt.rank {
				t.Errorf("rank %d, want %d", rank, tt.rank)
			}
			if sig != tt.sig {
				t.Errorf("significant %v, want %v (rank %d, ratio %.3f)", sig, tt.sig, rank, ratio)
			}
			if tt.ratioNear != 0 && (ratio < tt.ratioNear*0.97 || ratio > tt.ratioNear*1.03) {
				t.Errorf("ratio %.3f, want about %.2f", ratio, tt.ratioNear)
			}
		})
	}
}

func TestSetRanks(t *testing.T) {
	var r results.Record
	results.SetRanks(&r, [][]float64{{1, 2, 9}, {4, 4}}, false)
	if !reflect.DeepEqual(r.RankMedianUs, []float64{2, 4}) || !reflect.DeepEqual(r.RankMeanUs, []float64{4, 4}) || r.RankSamplesUs != nil {
		t.Errorf("got medians %v means %v samples %v", r.RankMedianUs, r.RankMeanUs, r.RankSamplesUs)
	}
}

func TestMergeRoundsPerRank(t *testing.T) {
	withRanks := func(r results.Record, keep bool, per ...[]float64) results.Record {
		r.RankHosts = []string{"h0-" + string(rune('0'+r.Round)), "h1"}
		r.RankPIDs = []int{100 + r.Round, 200}
		results.SetRanks(&r, per, keep)
		return r
	}
	t.Run("pooled samples", func(t *testing.T) {
		a := withRanks(roundRec(t, "p", 1, 2, 10, 11, 12), true, []float64{1, 2, 3}, []float64{10, 11, 12})
		b := withRanks(roundRec(t, "p", 2, 2, 20, 21, 22), true, []float64{4, 5, 6}, []float64{20, 21, 22})
		m := results.MergeRounds([]results.Record{a, b}, results.Fill)
		if len(m) != 1 {
			t.Fatalf("%d records", len(m))
		}
		got := m[0]
		if !reflect.DeepEqual(got.RankMedianUs, []float64{3.5, 16}) || !reflect.DeepEqual(got.RankMeanUs, []float64{3.5, 16}) {
			t.Errorf("medians %v means %v", got.RankMedianUs, got.RankMeanUs)
		}
		if !reflect.DeepEqual(got.RankSamplesUs, [][]float64{{1, 2, 3, 4, 5, 6}, {10, 11, 12, 20, 21, 22}}) {
			t.Errorf("samples %v", got.RankSamplesUs)
		}
		if !reflect.DeepEqual(got.RankHosts, []string{"h0-1", "h1"}) || !reflect.DeepEqual(got.RankPIDs, []int{101, 200}) {
			t.Errorf("hosts %v pids %v: want the first round's", got.RankHosts, got.RankPIDs)
		}
		got.RankSamplesUs[0][0] = -1
		if a.RankSamplesUs[0][0] != 1 {
			t.Error("the merged record shares its samples with a round's")
		}
	})
	t.Run("medians of rounds", func(t *testing.T) {
		a := withRanks(roundRec(t, "p", 1, 3, 10, 11, 12), false, []float64{1, 2, 3}, []float64{10, 10, 10})
		b := withRanks(roundRec(t, "p", 2, 3, 20, 21, 22), false, []float64{7, 8, 9}, []float64{30, 30, 30})
		c := withRanks(roundRec(t, "p", 3, 3, 20, 21, 22), false, []float64{4, 5, 6}, []float64{20, 20, 20})
		m := results.MergeRounds([]results.Record{a, b, c}, results.Fill)
		got := m[0]
		if !reflect.DeepEqual(got.RankMedianUs, []float64{5, 20}) || !reflect.DeepEqual(got.RankMeanUs, []float64{5, 20}) || got.RankSamplesUs != nil {
			t.Errorf("medians %v means %v samples %v", got.RankMedianUs, got.RankMeanUs, got.RankSamplesUs)
		}
	})
	t.Run("world sizes differ", func(t *testing.T) {
		a := withRanks(roundRec(t, "p", 1, 2, 10), true, []float64{1}, []float64{2})
		b := withRanks(roundRec(t, "p", 2, 2, 10), true, []float64{1})
		if got := results.MergeRounds([]results.Record{a, b}, results.Fill)[0]; got.RankMedianUs != nil {
			t.Errorf("medians %v, want none", got.RankMedianUs)
		}
	})
}
