package stats

import "math"

// MedianCI returns a distribution-free confidence interval of the median of
// sorted (ascending) at the requested confidence level, and the level the
// interval actually has (order statistics make it discrete, so it is >=
// confidence). Bounds that fall outside the sample are -Inf / +Inf.
//
// The number of samples below the population median is Binomial(n, ½), so the
// interval between order statistics X(l) and X(r) covers the median with
// probability P(l <= K < r). Starting at the mode of that distribution, we
// widen one step at a time towards the more probable side (the lower one on a
// tie) until the level is reached. This is the search
// golang.org/x/perf/benchmath (via go-moremath's QuantileCI) does for n <= 30,
// so benchstat and distbench print the same interval. Two differences, each
// worth at most one order statistic: we compute the binomial so that its
// symmetric ties are exact (go-moremath's rounding breaks one at n = 24), and
// above n = 30 we keep the exact binomial where benchmath switches to a normal
// approximation; it is cheap and can only be closer to the truth.
func MedianCI(sorted []float64, confidence float64) (lo, hi, level float64) {
	n := len(sorted)
	if n == 0 {
		return math.Inf(-1), math.Inf(1), 0
	}
	l, r, level := medianCIOrders(n, confidence)
	lo, hi = math.Inf(-1), math.Inf(1)
	if l >= 1 {
		lo = sorted[l-1]
	}
	if r <= n {
		hi = sorted[r-1]
	}
	return lo, hi, level
}

// medianCIOrders returns 1-based order statistics l and r bounding the
// interval, with l < 1 or r > n meaning an infinite bound.
func medianCIOrders(n int, confidence float64) (l, r int, level float64) {
	if confidence >= 1 {
		return 0, n + 1, 1
	}
	// The mode of Binomial(n, ½), the lower one when there are two.
	x := int(math.Ceil(float64(n+1)*0.5) - 1)
	accum := binomHalfPMF(n, x)
	l, r = x, x+1
	lp, rp := binomHalfPMF(n, l-1), binomHalfPMF(n, r)
	for accum < confidence && (lp > 0 || rp > 0) {
		if lp >= rp {
			accum += lp
			l--
			lp = binomHalfPMF(n, l-1)
		} else {
			accum += rp
			r++
			rp = binomHalfPMF(n, r)
		}
	}
	return max(l, 0), min(r, n+1), accum
}

// binomHalfPMF is P(K = k) for K ~ Binomial(n, ½), computed in log space so
// that it stays finite for large n.
func binomHalfPMF(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	// P(k) = P(n−k). Computing both from the same k makes the two sides
	// of the mode tie exactly, so the left bias above decides, not
	// rounding in Lgamma.
	k = min(k, n-k)
	lgN, _ := math.Lgamma(float64(n + 1))
	lgK, _ := math.Lgamma(float64(k + 1))
	lgNK, _ := math.Lgamma(float64(n - k + 1))
	return math.Exp(lgN - lgK - lgNK - float64(n)*math.Ln2)
}
