package stats

import "testing"

// TestSummarizeIterations follows nccl-tests' computeIterStats: the upper
// median, nearest-rank percentiles, the population deviation, and the
// skipped leading samples left out.
func TestSummarizeIterations(t *testing.T) {
	s := SummarizeIterations([]float64{1000, 4, 1, 3, 2}, 1)
	want := IterStats{Min: 1, Max: 4, Avg: 2.5, P50: 3, P95: 4, P99: 4, Stdev: 1.118033988749895, CVPct: 44.721359549995796, Skipped: 1}
	if s != want {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i)
	}
	if s := SummarizeIterations(hundred, 0); s.P99 != 99 || s.P95 != 95 || s.P50 != 51 {
		t.Errorf("1..100: p50 %v p95 %v p99 %v, want 51 95 99", s.P50, s.P95, s.P99)
	}
	if s := SummarizeIterations(nil, 3); s != (IterStats{}) {
		t.Errorf("no samples: %+v, want zeros", s)
	}
}
