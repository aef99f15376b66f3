package results

import (
	"math"
	"testing"

	"github.com/distbench/distbench/stats"
)

func near(a, b, tol float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

func TestFill(t *testing.T) {
	samples := []float64{1000, 1100, 900, 1000, 1050, 950, 1000}
	tests := []struct {
		name      string
		rec       Record
		wantBus   float64
		wantErr   bool
		wantNoCI  bool
		wantAlgBW float64
	}{
		{
			name:      "allreduce",
			rec:       Record{Collective: "allreduce", NP: 4, Bytes: 1e6},
			wantAlgBW: 1, wantBus: 1.5,
		},
		{
			name:      "unknown collective still fills times",
			rec:       Record{Collective: "mystery", NP: 4, Bytes: 1e6},
			wantAlgBW: 1, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rec
			err := Fill(&r, samples)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Fill error = %v, wantErr %v", err, tt.wantErr)
			}
			if r.TimeUs != 1000 || r.TimeUsMin != 900 || r.TimeUsMax != 1100 {
				t.Errorf("times: median %v min %v max %v", r.TimeUs, r.TimeUsMin, r.TimeUsMax)
			}
			if r.TimeUsCILo != 900 || r.TimeUsCIHi != 1100 {
				t.Errorf("CI = [%v, %v], want [900, 1100]", r.TimeUsCILo, r.TimeUsCIHi)
			}
			if len(r.SamplesUs) != len(samples) || &r.SamplesUs[0] == &samples[0] {
				t.Errorf("SamplesUs should be a copy of the samples")
			}
			if !near(r.AlgBWGBs, tt.wantAlgBW, 1e-12) || !near(r.BusBWGBs, tt.wantBus, 1e-12) {
				t.Errorf("algbw %v busbw %v, want %v %v", r.AlgBWGBs, r.BusBWGBs, tt.wantAlgBW, tt.wantBus)
			}
		})
	}
}

func TestApplyOmitsInfiniteCI(t *testing.T) {
	var r Record
	r.TimeUsCILo, r.TimeUsCIHi = 5, 6 // stale values must be cleared
	applySummary(&r, stats.Summarize([]float64{1, 2, 3}))
	if r.TimeUsCILo != 0 || r.TimeUsCIHi != 0 {
		t.Errorf("CI = [%v, %v], want absent", r.TimeUsCILo, r.TimeUsCIHi)
	}
}
