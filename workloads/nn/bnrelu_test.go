package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBNReLUKernels: the fused batch-norm-and-ReLU kernels give, bit for
// bit, what the unfused pair gives (bnAffine then relu; reluGrad then
// bnDots or bnBack), dispatched and in Go, on odd sizes and tails, with
// outputs that are positive, negative, +0 and −0.
func TestBNReLUKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	randv := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			switch rng.IntN(8) {
			case 0:
				v[i] = 0
			case 1:
				v[i] = float32(math.Copysign(0, -1))
			default:
				v[i] = float32(rng.NormFloat64()*3 + 0.5)
			}
		}
		return v
	}
	same := func(name string, n int, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s n %d: [%d] %v, unfused %v", name, n, i, got[i], want[i])
			}
		}
	}
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 33, 49, 196, 784, 1001} {
		x, dy, y := randv(n), randv(n), randv(n)
		mean := rng.NormFloat64()

		want := make([]float32, n)
		bnAffine(want, x, 1.3, -0.4)
		relu(want, want)
		for name, f := range map[string]func(dst, x []float32, scale, shift float32){"dispatched": bnAffineReLU, "go": bnAffineReLUGo} {
			got := make([]float32, n)
			f(got, x, 1.3, -0.4)
			same("bnAffineReLU "+name, n, got, want)
		}

		g := make([]float32, n)
		reluGrad(y, dy, g)
		wg, wgx := bnDots(g, x, mean)
		for name, f := range map[string]func(dy, y, x []float32, mean float64) (float64, float64){"dispatched": bnDotsMask, "go": bnDotsMaskGo} {
			sg, sgx := f(dy, y, x, mean)
			if math.Float64bits(sg) != math.Float64bits(wg) || math.Float64bits(sgx) != math.Float64bits(wgx) {
				t.Fatalf("bnDotsMask %s n %d: (%v, %v), unfused (%v, %v)", name, n, sg, sgx, wg, wgx)
			}
		}

		bnBack(want, g, x, 0.9, -1.3, 0.2)
		for name, f := range map[string]func(dst, dy, y, x []float32, a, b, c float32){"dispatched": bnBackMask, "go": bnBackMaskGo} {
			got := make([]float32, n+3)
			got[n], got[n+1], got[n+2] = 5, 6, 7
			f(got, dy, y, x, 0.9, -1.3, 0.2)
			same("bnBackMask "+name, n, got, want)
			if got[n] != 5 || got[n+1] != 6 || got[n+2] != 7 {
				t.Fatalf("bnBackMask %s n %d: wrote past the end", name, n)
			}
		}
	}
}
