package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// StudentTSF is the upper tail P(T > t) of Student's t distribution with df
// degrees of freedom: the p-value of a one-sided t test. It is gonum's
// (distuv.StudentsT), which computes the tail directly, so small p-values
// keep their precision.
func StudentTSF(t, df float64) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
}

// StudentTQuantile is the t with P(T > t) = p for Student's t with df
// degrees of freedom (gonum's quantile of 1 − p).
func StudentTQuantile(p, df float64) float64 {
	if !(p > 0 && p < 1) || df <= 0 {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - p)
}
