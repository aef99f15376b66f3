package stats

import (
	"math"
	"slices"

	mstats "github.com/montanaflynn/stats"

	"github.com/distbench/distbench/results"
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
// Percentiles interpolate linearly between order statistics (R's type 7,
// numpy's default), so P5 and P95 of a small sample stay within its range.
func Summarize(samples []float64) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	data := mstats.Float64Data(sorted)

	s := Summary{N: len(sorted), Min: sorted[0], Max: sorted[len(sorted)-1]}
	// The errors montanaflynn/stats can return here are for empty input or
	// out-of-range percents, both excluded above.
	s.Median, _ = mstats.Median(data)
	s.P5, _ = mstats.Percentile(data, 5)
	s.P95, _ = mstats.Percentile(data, 95)
	s.P99, _ = mstats.Percentile(data, 99)
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

// Apply copies the summary's timing statistics into r's time_us fields. A
// confidence interval that is not finite is left out (zero, so omitted from
// JSON, which has no infinities), and readers take absent bounds as "no
// interval".
func (s Summary) Apply(r *results.Record) {
	r.TimeUs = s.Median
	r.TimeUsP5 = s.P5
	r.TimeUsP95 = s.P95
	r.TimeUsP99 = s.P99
	r.TimeUsMin = s.Min
	r.TimeUsMax = s.Max
	r.TimeUsMean = s.Mean
	r.TimeUsStd = s.StdDev
	r.TimeUsCV = s.CV
	r.TimeUsCILo, r.TimeUsCIHi = 0, 0
	if s.HasCI() {
		r.TimeUsCILo, r.TimeUsCIHi = s.CILo, s.CIHi
	}
}

// Fill summarises samplesUs (per-iteration times in microseconds) into r: the
// time statistics, a copy of the samples (compare needs them), and algbw and
// busbw at the median time from r.Bytes, r.Collective and r.NP. The time
// fields are filled even when the bandwidth cannot be computed; the error then
// names the unknown collective or bad world size.
func Fill(r *results.Record, samplesUs []float64) error {
	s := Summarize(samplesUs)
	s.Apply(r)
	r.SamplesUs = slices.Clone(samplesUs)
	r.AlgBWGBs, r.BusBWGBs = 0, 0
	if s.N == 0 {
		return nil
	}
	r.AlgBWGBs = AlgBW(r.Bytes, s.Median/1e6)
	busbw, err := BusBW(r.Collective, r.NP, r.AlgBWGBs)
	if err != nil {
		return err
	}
	r.BusBWGBs = busbw
	return nil
}
