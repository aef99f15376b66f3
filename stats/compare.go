package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"golang.org/x/perf/benchmath"
)

// MannWhitney tests whether samples x and y come from the same distribution
// with the Mann-Whitney U test, as benchstat does (golang.org/x/perf/benchmath,
// which assumes nothing about the distribution), and returns the two-sided
// p-value and benchmath's warnings about samples too small to detect a
// difference at significance level alpha. It does not modify x or y.
func MannWhitney(x, y []float64, alpha float64) (p float64, warnings []error) {
	thr := benchmath.Thresholds{CompareAlpha: alpha}
	// NewSample sorts its argument in place.
	res := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(x), &thr), benchmath.NewSample(slices.Clone(y), &thr))
	return res.P, res.Warnings
}

// MedianRatioCI is a 95% percentile-bootstrap confidence interval of
// Median(new) / Median(base) − 1, from 1000 resamples of each. The generator
// is seeded with seed, so the same samples and seed give the same interval.
// Fewer than 2 samples in either gives NaN bounds.
func MedianRatioCI(base, new []float64, seed uint64) (lo, hi float64) {
	if len(base) < 2 || len(new) < 2 {
		return math.NaN(), math.NaN()
	}
	const resamples = 1000
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	bs, ns := slices.Sorted(slices.Values(base)), slices.Sorted(slices.Values(new))
	bc, nc := make([]int, len(bs)), make([]int, len(ns))
	ratios := make([]float64, resamples)
	for i := range ratios {
		ratios[i] = resampledMedian(ns, nc, rng) / resampledMedian(bs, bc, rng)
	}
	slices.Sort(ratios)
	return ratios[int(0.025*resamples)] - 1, ratios[int(0.975*resamples)-1] - 1
}

// resampledMedian draws len(sorted) values with replacement and returns their
// median. Because sorted is sorted, the resample's order statistics are those
// of the drawn indices, so counting them finds the median in O(n) without
// sorting the resample.
func resampledMedian(sorted []float64, counts []int, rng *rand.Rand) float64 {
	n := len(sorted)
	clear(counts)
	for range n {
		counts[rng.IntN(n)]++
	}
	kth := func(k int) float64 { // the k-th smallest, 0-based
		seen := 0
		for i, c := range counts {
			seen += c
			if seen > k {
				return sorted[i]
			}
		}
		return sorted[n-1]
	}
	if n%2 == 1 {
		return kth(n / 2)
	}
	return (kth(n/2-1) + kth(n/2)) / 2
}

// SignTest is the exact two-sided p-value of the sign test that the
// differences d are as likely positive as negative: the paired test of
// an A/B run, where d holds one log ratio per pair of back-to-back rounds.
// It counts signs only, so a pair that a burst of load doubled weighs no
// more than any other: 14 of 16 pairs of one sign give p = 0.004 whatever
// the other two did. Zeros and NaNs are dropped; no differences give 1.
func SignTest(d []float64) float64 {
	pos, n := 0, 0
	for _, x := range d {
		if x != 0 && !math.IsNaN(x) {
			n++
			if x > 0 {
				pos++
			}
		}
	}
	if n == 0 {
		return 1
	}
	k := min(pos, n-pos)
	// P(X <= k) for X ~ Binomial(n, 1/2), summed in logs to stay finite
	// for large n.
	tail := 0.0
	for i := 0; i <= k; i++ {
		lc, _ := math.Lgamma(float64(n + 1))
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		tail += math.Exp(lc - li - lr - float64(n)*math.Ln2)
	}
	return min(1, 2*tail)
}
