package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestElemKernels: the dispatched element-wise kernels give the Go
// kernels' bits (a NaN for a NaN) (NaNs, ±0 and ±Inf among the inputs) on odd sizes, tails
// and unaligned slices, and write nothing past the end.
func TestElemKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0xffc00000)} // a negative NaN
	randv := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			if rng.IntN(5) == 0 {
				v[i] = specials[rng.IntN(len(specials))]
			} else {
				v[i] = float32(rng.NormFloat64())
			}
		}
		return v
	}
	// Any NaN stands for any other: only the payloads differ, which nothing reads.
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for _, n := range []int{0, 1, 7, 8, 9, 16, 23, 49, 196, 1001} {
		for _, off := range []int{0, 1, 5} {
			a, b := randv(n + off)[off:], randv(n + off)[off:]
			for name, run := range map[string][2]func(dst []float32){
				"reluAdd":  {func(d []float32) { reluAdd(d, a, b) }, func(d []float32) { reluAddGo(d, a, b) }},
				"relu":     {func(d []float32) { relu(d, a) }, func(d []float32) { reluGo(d, a) }},
				"add3":     {func(d []float32) { add3(d, a, b) }, func(d []float32) { add3Go(d, a, b) }},
				"reluGrad": {func(d []float32) { reluGrad(a, b, d) }, func(d []float32) { reluGradGo(a, b, d) }},
			} {
				got, want := randv(n + off + 3)[off:], make([]float32, n)
				tail := append([]float32(nil), got[n:]...)
				run[0](got)
				run[1](want)
				for i := range want {
					if !same(got[i], want[i]) {
						t.Fatalf("%s n %d off %d: [%d] %v, want %v (inputs %v, %v)", name, n, off, i, got[i], want[i], a[i], b[i])
					}
				}
				for i, v := range tail {
					if !same(got[n+i], v) {
						t.Fatalf("%s n %d off %d: wrote past the end", name, n, off)
					}
				}
			}
		}
	}
}
