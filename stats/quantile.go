package stats

import (
	"math"
	"slices"
)

// Quantile returns the p-quantile (0 <= p <= 1) of sorted (ascending),
// interpolating linearly between order statistics: R's type 7, numpy's
// default, so that the quantiles of a small sample stay within its range.
// An empty slice gives 0, as it gives [Summarize] the zero Summary.
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := p * float64(n-1)
	k := int(rank)
	f := rank - float64(k)
	if k+1 >= n || f == 0 || sorted[k+1] == sorted[k] {
		return sorted[min(k, n-1)]
	}
	if d := sorted[k+1] - sorted[k]; !math.IsInf(d, 1) {
		return sorted[k] + f*d
	}
	// An infinite difference (overflow or an infinite endpoint): weigh the
	// endpoints separately so that large finite inputs stay finite.
	return (1-f)*sorted[k] + f*sorted[k+1]
}

// Median returns the median of xs, the mean of the middle pair when their
// number is even; it does not modify xs. An empty slice gives 0, as it
// gives [Summarize] the zero Summary, so that no samples still make JSON.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	s := xs
	if !slices.IsSorted(xs) {
		s = slices.Sorted(slices.Values(xs))
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// LowerMedian is the lower middle of xs sorted: the median for an odd
// number of values, the lesser of the middle pair for an even one, so
// always one of the values (as results.SlowestRank takes the median rank);
// 0 for none. It does not modify xs.
func LowerMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[(len(s)-1)/2]
}

// MedianSE is the standard error of the median of n values of standard
// deviation sigma: √(π/2) σ/√n, for values near normal.
func MedianSE(sigma float64, n int) float64 {
	return 1.2533 * sigma / math.Sqrt(float64(n))
}

// RelativeIQRSpread is the interquartile range of xs over 1.349 (a normal
// distribution's standard deviation, estimated so that a few slow outliers
// do not inflate it) divided by their median, so a fraction of it. It is 0
// for fewer than 4 values or a non-positive median.
func RelativeIQRSpread(xs []float64) float64 {
	if len(xs) < 4 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	med := Quantile(s, 0.5)
	if med <= 0 {
		return 0
	}
	return (Quantile(s, 0.75) - Quantile(s, 0.25)) / 1.349 / med
}

// ScaledMAD is 1.4826 × the median absolute deviation of xs from their
// median, in xs's own units: a normal distribution's standard deviation,
// estimated so that one outlier of three does not move it (R's mad()). It
// suits values centred anywhere, zero included (residuals, log ratios);
// [RelativeMADSpread] is the same spread as a fraction of a positive median.
// It is 0 for fewer than 2 values.
func ScaledMAD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	med := Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	return 1.4826 * Median(dev)
}

// RelativeMADSpread is [ScaledMAD] divided by the median of xs, so a
// fraction of it: of timings, how far they spread as a share of their
// typical value. Of a few values the median absolute deviation is too small
// on average (of three, by a third), so it is scaled by Croux and
// Rousseeuw's small-sample factor, which makes it unbiased for a normal
// distribution. It is 0 for fewer than 2 values or a non-positive median:
// of values centred on zero, use ScaledMAD.
func RelativeMADSpread(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return 0
	}
	med := Median(xs)
	if med <= 0 {
		return 0
	}
	return madSmallSample(n) * ScaledMAD(xs) / med
}

// madSmallSample is Croux and Rousseeuw's correction of the median absolute
// deviation of n values ("Time-efficient algorithms for two highly robust
// estimators of scale", 1992), checked by simulation.
func madSmallSample(n int) float64 {
	table := []float64{2: 1.196, 3: 1.495, 4: 1.363, 5: 1.206, 6: 1.200, 7: 1.140, 8: 1.129, 9: 1.107}
	if n < len(table) {
		return table[n]
	}
	return float64(n) / (float64(n) - 0.8)
}
