package results

import (
	"slices"

	"github.com/distbench/distbench/stats"
)

// Fill summarises samplesUs (per-iteration times in microseconds) into r: the
// time statistics, a copy of the samples (compare needs them), and algbw and
// busbw at the median time from r.Bytes, r.Collective and r.NP. The time
// fields are filled even when the bandwidth cannot be computed; the error then
// names the unknown collective or bad world size. It is the [FillFunc]
// distbench uses.
func Fill(r *Record, samplesUs []float64) error {
	s := stats.Summarize(samplesUs)
	applySummary(r, s)
	r.SamplesUs = slices.Clone(samplesUs)
	r.AlgBWGBs, r.BusBWGBs = 0, 0
	if s.N == 0 {
		return nil
	}
	r.AlgBWGBs = stats.AlgBW(r.Bytes, s.Median/1e6)
	busbw, err := stats.BusBW(r.Collective, r.NP, r.AlgBWGBs)
	if err != nil {
		return err
	}
	r.BusBWGBs = busbw
	return nil
}

// applySummary copies s's timing statistics into r's time_us fields. A
// confidence interval that is not finite is left out (zero, so omitted from
// JSON, which has no infinities), and readers take absent bounds as "no
// interval".
func applySummary(r *Record, s stats.Summary) {
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
