package nn

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"
)

func sqrt(x float64) float64 { return math.Sqrt(x) }

// sum32 adds s in float64 (accurate) and rounds once.
func sum32(s []float32) float32 {
	var t float64
	for _, v := range s {
		t += float64(v)
	}
	return float32(t)
}

// axpy computes y += a·x with gonum's SIMD kernel.
func axpy(a float32, x, y []float32) {
	if len(x) == 0 {
		return
	}
	blas32.Axpy(a, blas32.Vector{N: len(x), Inc: 1, Data: x}, blas32.Vector{N: len(x), Inc: 1, Data: y[:len(x)]})
}
