package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gemmImpls are the products tested against the float64 reference: the
// packed driver with the Go micro-kernel (any machine), with the assembly
// (where the CPU has it), gonum's, and gemmSerial as dispatched.
func gemmImpls() map[string]func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	impls := map[string]func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int){
		"packed-go": func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			sgemm(kernelGo, mr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		},
		"packed-go8": func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			sgemm(kernelGo8, 8, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		},
		"dot-go": func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			if !tb || ta {
				gemmSerial(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
				return
			}
			sgemmDot(dotGo, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		},
		"gonum":  gemmGonum,
		"serial": gemmSerial,
		"parallel-3": func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			gemm(3, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		},
	}
	if fastKernel != nil {
		impls["packed-fast"] = func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			sgemm(fastKernel, mr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
	}
	for name, kern := range archKernels {
		impls["packed-"+name] = func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			sgemm(kern.fn, kern.rows, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
	}
	for name, dot := range archDots {
		impls["dot-"+name] = func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			if !tb || ta {
				gemmSerial(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
				return
			}
			sgemmDot(dot, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
	}
	return impls
}

// archDots are every assembly dot kernel this CPU runs.
var archDots = map[string]dotKernel{}

// archKernels are every assembly micro-kernel this CPU runs, not only the
// one dispatched (sgemm_amd64_test.go fills it).
var archKernels = map[string]rowsKernel{}

// rowsKernel is a micro-kernel and its tile height.
type rowsKernel struct {
	fn   microKernel
	rows int
}

type gemmCase struct {
	ta, tb      bool
	m, n, k     int
	alpha, beta float32
}

// strides are A's and B's row strides with no padding: k and n, or m and
// k where transposed.
func (tc gemmCase) strides() (lda, ldb int) {
	lda, ldb = tc.k, tc.n
	if tc.ta {
		lda = tc.m
	}
	if tc.tb {
		ldb = tc.k
	}
	return lda, ldb
}

// gemmCases cover 1×1, odd sizes, and both sides of every tile and block
// edge (mr 6, nr 16, MC 144, KC 256) in every transposition the layers use.
func gemmCases() []gemmCase {
	var cs []gemmCase
	for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		for _, s := range [][3]int{
			{1, 1, 1}, {7, 13, 5}, {5, 15, 3}, {6, 16, 4}, {7, 17, 9},
			{12, 32, 8}, {13, 33, 1}, {1, 100, 37}, {100, 1, 37},
			{143, 31, 255}, {144, 48, 256}, {145, 49, 257}, {16, 784, 144},
			{64, 196, 576}, {11, 4097, 3}, {3, 5, 600},
		} {
			cs = append(cs, gemmCase{tr[0], tr[1], s[0], s[1], s[2], 1, 0})
		}
		cs = append(cs,
			gemmCase{tr[0], tr[1], 9, 21, 30, 1, 1},
			gemmCase{tr[0], tr[1], 9, 21, 30, -0.5, 0.25},
			gemmCase{tr[0], tr[1], 9, 21, 0, 1, 0.5},
			gemmCase{tr[0], tr[1], 9, 21, 30, 0, 2})
	}
	return cs
}

func TestGemmAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	for _, tc := range gemmCases() {
		// Strides wider than the matrices, so views inside larger ones are
		// exercised too.
		lda, ldb, ldc := tc.k+3, tc.n+1, tc.n+5
		if tc.ta {
			lda = tc.m + 2
		}
		if tc.tb {
			ldb = tc.k + 4
		}
		ar, br := tc.m, tc.k
		if tc.ta {
			ar = tc.k
		}
		if tc.tb {
			br = tc.n
		}
		a, b, c0 := randSlice(rng, ar*lda), randSlice(rng, br*ldb), randSlice(rng, tc.m*ldc)
		want := make([]float64, len(c0))
		bound := make([]float64, len(c0)) // Σ|a·b| + |beta·c|, for the tolerance
		for i := 0; i < tc.m; i++ {
			for j := 0; j < tc.n; j++ {
				var s, sa float64
				for l := 0; l < tc.k; l++ {
					var av, bv float32
					if tc.ta {
						av = a[l*lda+i]
					} else {
						av = a[i*lda+l]
					}
					if tc.tb {
						bv = b[j*ldb+l]
					} else {
						bv = b[l*ldb+j]
					}
					s += float64(av) * float64(bv)
					sa += math.Abs(float64(av) * float64(bv))
				}
				cv := float64(c0[i*ldc+j])
				want[i*ldc+j] = float64(tc.alpha)*s + float64(tc.beta)*cv
				bound[i*ldc+j] = math.Abs(float64(tc.alpha))*sa + math.Abs(float64(tc.beta)*cv)
			}
		}
		for name, f := range gemmImpls() {
			c := append([]float32(nil), c0...)
			f(tc.ta, tc.tb, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
			for i := 0; i < tc.m; i++ {
				for j := 0; j < ldc; j++ {
					x := i*ldc + j
					if j >= tc.n {
						if c[x] != c0[x] {
							t.Fatalf("%s %+v: C[%d][%d] beyond n changed", name, tc, i, j)
						}
						continue
					}
					tol := 1e-6 * float64(tc.k+2) * (bound[x] + 1)
					if d := math.Abs(float64(c[x]) - want[x]); d > tol {
						t.Fatalf("%s %+v: C[%d][%d] = %v, want %v (±%g)", name, tc, i, j, c[x], want[x], tol)
					}
				}
			}
		}
	}
}

// TestGemmDeterministic: the product's bits depend only on its operands,
// not on how C is split between goroutines or which call runs first.
func TestGemmDeterministic(t *testing.T) {
	if fastKernel == nil {
		t.Skip("gonum's fallback spreads a product its own way; ranks agree because they run the same split")
	}
	rng := rand.New(rand.NewPCG(19, 2))
	for _, s := range [][5]int{{64, 576, 196, 0, 0}, {16, 784, 144, 0, 0}, {144, 784, 16, 1, 0}, {33, 1000, 300, 0, 1}, {16, 145, 787, 0, 1}} {
		m, n, k, ta, tb := s[0], s[1], s[2], s[3] == 1, s[4] == 1
		lda, ldb := k, n
		if ta {
			lda = m
		}
		if tb {
			ldb = k
		}
		a, b := randSlice(rng, m*k), randSlice(rng, k*n)
		ref := make([]float32, m*n)
		gemmSerial(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, ref, n)
		for _, w := range []int{1, 2, 3, 7} {
			for rep := 0; rep < 3; rep++ {
				c := make([]float32, m*n)
				gemm(w, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("%v workers %d: C[%d] = %v, serial %v", s, w, i, c[i], ref[i])
					}
				}
			}
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}

// TestGemmBetaZeroBits: with beta 0 the kernels store their sums over C
// instead of clearing C and adding; that must give the bits of the
// clear-and-add path, whatever C held before (NaN included).
func TestGemmBetaZeroBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 3))
	kerns := map[string]rowsKernel{"go": {kernelGo, mr}, "go8": {kernelGo8, 8}}
	for name, k := range archKernels {
		kerns[name] = k
	}
	for _, tc := range gemmCases() {
		lda, ldb := tc.strides()
		a, b := randSlice(rng, tc.m*tc.k), randSlice(rng, tc.k*tc.n)
		for name, kern := range kerns {
			want := make([]float32, tc.m*tc.n)
			sgemm(kern.fn, kern.rows, tc.ta, tc.tb, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, 1, want, tc.n)
			got := make([]float32, tc.m*tc.n)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			sgemm(kern.fn, kern.rows, tc.ta, tc.tb, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, 0, got, tc.n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %+v: C[%d] = %v with beta 0, %v cleared and added", name, tc, i, got[i], want[i])
				}
			}
		}
	}
}

// TestGemmTileRowsSameBits: the 6- and 8-row kernels of one instruction
// set sum every element in the same order, so kernelFor's choice between
// them never changes a bit.
func TestGemmTileRowsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 4))
	pairs := map[string][2]rowsKernel{"go": {{kernelGo, mr}, {kernelGo8, 8}}}
	if k6, ok := archKernels["avx512"]; ok {
		pairs["avx512"] = [2]rowsKernel{k6, archKernels["avx512x8"]}
	}
	for _, tc := range gemmCases() {
		lda, ldb := tc.strides()
		a, b, c0 := randSlice(rng, tc.m*tc.k), randSlice(rng, tc.k*tc.n), randSlice(rng, tc.m*tc.n)
		for name, pair := range pairs {
			want := append([]float32(nil), c0...)
			sgemm(pair[0].fn, pair[0].rows, tc.ta, tc.tb, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, want, tc.n)
			got := append([]float32(nil), c0...)
			sgemm(pair[1].fn, pair[1].rows, tc.ta, tc.tb, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, tc.n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %+v: C[%d] = %v with 8 rows a tile, %v with 6", name, tc, i, got[i], want[i])
				}
			}
		}
	}
}
