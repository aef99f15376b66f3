package results

import (
	"math"
	"slices"

	"github.com/distbench/distbench/stats"
)

// SetRanks fills r's per-rank time fields from each rank's own
// per-iteration times (µs), indexed by rank: RankMedianUs and RankMeanUs,
// and RankSamplesUs (a copy) when keep is set. A rank without samples has
// zero median and mean.
func SetRanks(r *Record, perRank [][]float64, keep bool) {
	r.RankMedianUs = make([]float64, len(perRank))
	r.RankMeanUs = make([]float64, len(perRank))
	r.RankSamplesUs = nil
	for i, xs := range perRank {
		r.RankMedianUs[i] = stats.Median(xs)
		r.RankMeanUs[i] = mean(xs)
	}
	if keep {
		r.RankSamplesUs = make([][]float64, len(perRank))
		for i, xs := range perRank {
			r.RankSamplesUs[i] = slices.Clone(xs)
		}
	}
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// The thresholds of SlowestRank.
const (
	// SlowRankMinEffect is the smallest excess of the slowest rank's
	// median over the median rank's that SlowestRank calls significant.
	SlowRankMinEffect = 0.05
	// SlowRankAlpha is the significance level of its rank-sum test.
	SlowRankAlpha = 0.01
)

// SlowestRank names the rank whose median per-iteration time
// (RankMedianUs) is the largest and its ratio to the median rank's (the
// rank in the middle of the ranks sorted by median; the lower middle for an
// even count), and says whether that rank is slower by more than the noise:
//
//   - the ratio must be at least 1 + SlowRankMinEffect (5%), and
//   - with both ranks' samples (RankSamplesUs, at least 5 each), the
//     Mann-Whitney U test of the two must give p < SlowRankAlpha (0.01)
//     and the 95% bootstrap interval of the ratio of their medians
//     (stats.MedianRatioCI) must lie wholly above 1;
//   - without samples, the ratio must exceed 1 by more than twice the
//     relative half-width of the point's own 95% interval of its median
//     time (TimeUsCILo/Hi), the only measure of noise the record has; a
//     record without that interval is never significant.
//
// A record with fewer than two ranks' medians gives rank -1, ratio 0 and
// false. Only the slowest rank is judged: a second slow rank is not named.
func SlowestRank(r *Record) (rank int, ratio float64, significant bool) {
	meds := r.RankMedianUs
	if len(meds) < 2 {
		return -1, 0, false
	}
	order := make([]int, len(meds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case meds[a] < meds[b]:
			return -1
		case meds[a] > meds[b]:
			return 1
		}
		return 0
	})
	slow, mid := order[len(order)-1], order[(len(order)-1)/2]
	if meds[mid] <= 0 || math.IsNaN(meds[slow]) {
		return slow, 0, false
	}
	ratio = meds[slow] / meds[mid]
	if ratio < 1+SlowRankMinEffect {
		return slow, ratio, false
	}
	if len(r.RankSamplesUs) == len(meds) {
		x, y := r.RankSamplesUs[mid], r.RankSamplesUs[slow]
		if len(x) >= 5 && len(y) >= 5 {
			p, _ := stats.MannWhitney(x, y, SlowRankAlpha)
			lo, _ := stats.MedianRatioCI(x, y, 1)
			return slow, ratio, p < SlowRankAlpha && lo > 0
		}
	}
	if r.TimeUs <= 0 || r.TimeUsCIHi <= r.TimeUsCILo || r.TimeUsCILo <= 0 {
		return slow, ratio, false
	}
	halfWidth := (r.TimeUsCIHi - r.TimeUsCILo) / 2 / r.TimeUs
	return slow, ratio, ratio-1 > 2*halfWidth
}

// mergeRanks sets m's per-rank fields from the pooled rounds: hosts and
// pids from the first; each rank's samples pooled in round order when every
// round kept them, its median and mean recomputed from them; otherwise each
// rank's median is the median of the rounds' medians and its mean the
// rounds' means weighted by their iterations. Rounds whose world size
// differs from the first's leave the per-rank times out.
func mergeRanks(m *Record, pooled []*Record) {
	first := pooled[0]
	m.RankHosts, m.RankPIDs = slices.Clone(first.RankHosts), slices.Clone(first.RankPIDs)
	m.RankMedianUs, m.RankMeanUs, m.RankSamplesUs = nil, nil, nil
	n := len(first.RankMedianUs)
	sampled := true
	for _, r := range pooled {
		if len(r.RankMedianUs) != n || len(r.RankMeanUs) != n {
			return
		}
		sampled = sampled && len(r.RankSamplesUs) == n
	}
	if n == 0 {
		return
	}
	if sampled {
		per := make([][]float64, n)
		for _, r := range pooled {
			for i, xs := range r.RankSamplesUs {
				per[i] = append(per[i], xs...)
			}
		}
		SetRanks(m, per, true)
		return
	}
	m.RankMedianUs, m.RankMeanUs = make([]float64, n), make([]float64, n)
	for i := range n {
		var meds []float64
		sum, w := 0.0, 0.0
		for _, r := range pooled {
			meds = append(meds, r.RankMedianUs[i])
			it := float64(max(r.Iters, 1))
			sum += r.RankMeanUs[i] * it
			w += it
		}
		m.RankMedianUs[i] = stats.Median(meds)
		m.RankMeanUs[i] = sum / w
	}
}

// cloneRanks copies r's per-rank slices so that m shares none with r.
func cloneRanks(m *Record) {
	m.RankHosts = slices.Clone(m.RankHosts)
	m.RankPIDs = slices.Clone(m.RankPIDs)
	m.RankMedianUs = slices.Clone(m.RankMedianUs)
	m.RankMeanUs = slices.Clone(m.RankMeanUs)
	if m.RankSamplesUs != nil {
		per := make([][]float64, len(m.RankSamplesUs))
		for i, xs := range m.RankSamplesUs {
			per[i] = slices.Clone(xs)
		}
		m.RankSamplesUs = per
	}
}
