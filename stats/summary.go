package stats

import (
	"math"
	"slices"

	mstats "github.com/montanaflynn/stats"
)

// Confidence is the confidence level of the interval [Summary.CILo, Summary.CIHi].
const Confidence = 0.95

// Summary describes a set of per-iteration times. All times are in the unit
// of the samples (distbench uses microseconds).
type Summary struct {
	N      int
	Median float64
	P5     float64
	P95    float64
	P99    float64
	Min    float64
	Max    float64
	Mean   float64
	StdDev float64 // sample standard deviation (n−1)
	CV     float64 // StdDev / Mean; 0 when undefined

	// CILo and CIHi bound a distribution-free confidence interval of the
	// median at level CIConfidence (>= Confidence; order statistics make the
	// level discrete). They are -Inf and +Inf when there are too few samples
	// for a finite interval (fewer than 6 at 95%).
	CILo, CIHi   float64
	CIConfidence float64
}

// HasCI reports whether the confidence interval is finite.
func (s Summary) HasCI() bool {
	return s.N > 0 && !math.IsInf(s.CILo, 0) && !math.IsInf(s.CIHi, 0)
}

// Summarize computes the summary of samples. It does not modify samples. An
// empty slice gives the zero Summary.
//
// Percentiles are [Quantile]s: they interpolate linearly between order
// statistics, so P5 and P95 of a small sample stay within its range.
func Summarize(samples []float64) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	data := mstats.Float64Data(sorted)
	s := Summary{N: len(sorted), Min: sorted[0], Max: sorted[len(sorted)-1]}
	s.Median = Median(sorted)
	s.P5 = Quantile(sorted, 0.05)
	s.P95 = Quantile(sorted, 0.95)
	s.P99 = Quantile(sorted, 0.99)
	// montanaflynn/stats errs only on empty input, excluded above; it
	// guards the mean and deviation against overflow.
	s.Mean, _ = mstats.Mean(data)
	if len(sorted) > 1 {
		s.StdDev, _ = mstats.StandardDeviationSample(data)
		if s.Mean != 0 {
			s.CV = s.StdDev / s.Mean
		}
	}
	s.CILo, s.CIHi, s.CIConfidence = MedianCI(sorted, Confidence)
	return s
}
