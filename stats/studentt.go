package stats

import "math"

// StudentTSF is the upper tail P(T > t) of Student's t distribution with df
// degrees of freedom: the p-value of a one-sided t test.
func StudentTSF(t, df float64) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	// P(|T| > |t|) = I_x(df/2, 1/2) with x = df / (df + t²).
	tail := regIncBeta(df/2, 0.5, df/(df+t*t)) / 2
	if t < 0 {
		return 1 - tail
	}
	return tail
}

// StudentTQuantile is the t with P(T > t) = p for Student's t with df
// degrees of freedom, found by bisection on StudentTSF.
func StudentTQuantile(p, df float64) float64 {
	if !(p > 0 && p < 1) || df <= 0 {
		return math.NaN()
	}
	if p > 0.5 {
		return -StudentTQuantile(1-p, df)
	}
	lo, hi := 0.0, 1.0
	for StudentTSF(hi, df) > p {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if StudentTSF(mid, df) > p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by the
// continued fraction of Numerical Recipes (betacf), which converges in a
// few dozen terms for the small a and b of a t test.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1/nonzero(1-qab*x/qap, tiny)
	h := d
	// step applies one term aa of the fraction (the modified Lentz
	// method) and returns the factor it multiplies h by.
	step := func(aa float64) float64 {
		d = nonzero(1+aa*d, tiny)
		c = nonzero(1+aa/c, tiny)
		d = 1 / d
		return d * c
	}
	for m := 1; m <= 300; m++ {
		m2 := float64(2 * m)
		fm := float64(m)
		h *= step(fm * (b - fm) * x / ((qam + m2) * (a + m2)))
		del := step(-(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2)))
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return h
}

// nonzero is v, or tiny where v is closer to zero than that: the
// continued fraction divides by it.
func nonzero(v, tiny float64) float64 {
	if math.Abs(v) < tiny {
		return tiny
	}
	return v
}
