package stats

import (
	"math"
	"slices"
)

// IterStats are nccl-tests' per-iteration summaries of one point (its -I
// columns and -J's per_iter objects), as computeIterStats in its
// src/util.cu defines them: after Skipped leading iterations, the least
// and most, the mean, the upper median, nearest-rank percentiles, the
// population standard deviation and the coefficient of variation (%).
// They are nccl-tests' definitions, kept so that figures set beside
// nccl-tests' mean the same; distbench's own summary is [Summary].
type IterStats struct {
	Min, Max, Avg, P50, P95, P99, Stdev, CVPct float64
	Skipped                                    int
}

// SummarizeIterations computes [IterStats] of timesUs, leaving out the first
// skip (at most all but one).
func SummarizeIterations(timesUs []float64, skip int) IterStats {
	skip = min(max(skip, 0), max(len(timesUs)-1, 0))
	s := slices.Clone(timesUs[skip:])
	if len(s) == 0 {
		return IterStats{}
	}
	slices.Sort(s)
	n := len(s)
	pct := func(p int) float64 { return s[min(n-1, (n*p+99)/100-1)] }
	st := IterStats{Min: s[0], Max: s[n-1], P50: s[n/2], P95: pct(95), P99: pct(99), Skipped: skip}
	for _, v := range s {
		st.Avg += v
	}
	st.Avg /= float64(n)
	for _, v := range s {
		st.Stdev += (v - st.Avg) * (v - st.Avg)
	}
	st.Stdev = math.Sqrt(st.Stdev / float64(n))
	if st.Avg > 0 {
		st.CVPct = st.Stdev / st.Avg * 100
	}
	return st
}
