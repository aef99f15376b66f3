package costmodel

import "github.com/distbench/distbench/results"

// Lateness returns how late ranks entered the collectives of a sweep, in
// seconds, one sample per rank and point: a rank that arrives late waits
// least, so its own median time is shorter than the slowest rank's by about
// its lateness. DrawDelays turns the samples into a simulation's per-rank
// start delays, the straggler distribution of the machine that ran them.
func Lateness(recs []results.Record) []float64 {
	var out []float64
	for _, r := range recs {
		if r.Kind != results.KindCollective || r.Error != "" || len(r.RankMedianUs) < 2 {
			continue
		}
		slowest := 0.0
		for _, m := range r.RankMedianUs {
			slowest = max(slowest, m)
		}
		for _, m := range r.RankMedianUs {
			if m > 0 {
				out = append(out, (slowest-m)*1e-6)
			}
		}
	}
	return out
}
