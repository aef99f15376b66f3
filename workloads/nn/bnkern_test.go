package nn

import (
	"math/rand/v2"
	"testing"
)

// TestBNKernels: the dispatched batch-norm kernels (assembly where the CPU
// has it) give the pure-Go kernels' bits on odd sizes, tails and slices
// that start off a 32-byte boundary, and leave what follows dst alone.
func TestBNKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randv := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64()*3 + 1)
		}
		return v
	}
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 33, 49, 196, 784, 1001} {
		for _, off := range []int{0, 1, 3} {
			x, g := randv(n + off + 5)[off:off+n], randv(n + off)[off:]
			mean := rng.NormFloat64()
			s, ss := bnSums(x, mean)
			ws, wss := bnSumsGo(x, mean)
			if s != ws || ss != wss {
				t.Errorf("bnSums n %d off %d: (%v, %v), want (%v, %v)", n, off, s, ss, ws, wss)
			}
			sg, sgx := bnDots(g, x, mean)
			wg, wgx := bnDotsGo(g, x, mean)
			if sg != wg || sgx != wgx {
				t.Errorf("bnDots n %d off %d: (%v, %v), want (%v, %v)", n, off, sg, sgx, wg, wgx)
			}
			got, want := randv(n + off + 3)[off:], make([]float32, n)
			sentinel := append([]float32(nil), got[n:]...)
			bnAffine(got, x, 1.7, -0.3)
			bnAffineGo(want, x, 1.7, -0.3)
			checkBits(t, "bnAffine", n, off, got, want, sentinel)
			bnBack(got, g, x, 0.9, -1.3, 0.2)
			bnBackGo(want, g, x, 0.9, -1.3, 0.2)
			checkBits(t, "bnBack", n, off, got, want, sentinel)
		}
	}
}

func checkBits(t *testing.T, name string, n, off int, got, want, sentinel []float32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s n %d off %d: [%d] %v, want %v", name, n, off, i, got[i], want[i])
			return
		}
	}
	for i, v := range sentinel {
		if got[n+i] != v {
			t.Errorf("%s n %d off %d: wrote past the end at %d", name, n, off, n+i)
			return
		}
	}
}

// TestBNSumsAccuracy: the lane sums agree with a plain float64 sum.
func TestBNSumsAccuracy(t *testing.T) {
	x := make([]float32, 1000)
	for i := range x {
		x[i] = float32(i%37) - 18
	}
	var s, ss float64
	for _, v := range x {
		s += float64(v) - 0.5
		ss += (float64(v) - 0.5) * (float64(v) - 0.5)
	}
	gs, gss := bnSums(x, 0.5)
	if d := gs - s; d > 1e-9 || d < -1e-9 {
		t.Errorf("Σ: %v, want %v", gs, s)
	}
	if d := (gss - ss) / ss; d > 1e-12 || d < -1e-12 {
		t.Errorf("Σ²: %v, want %v", gss, ss)
	}
}
