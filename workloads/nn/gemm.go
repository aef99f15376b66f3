package nn

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Tile sizes for gemmSerial. Gonum's Sgemm spreads a product over goroutines
// once it spans four or more 64×64 blocks of C; a tile of at most 64×192
// stays below that, so each batch worker runs its own products serially and
// the two levels of parallelism do not fight. kc keeps a 64×192 panel of B in
// L2 while the rows of C sweep over it.
const (
	tileM = 64
	tileN = 192
	tileK = 256

	tileMTransA = 32
	tileKDot    = 1024
)

// minDotK is the depth from which A·Bᵀ runs as dot products: below it the
// dot kernel's horizontal sums outweigh its savings on packing (20×250×64,
// LeNet's dW: 18 GFLOP/s as dots, 30 packed; 16×144×784: 110 against 25).
// It depends on k alone, so a split of C never changes which path an
// element takes.
const minDotK = 128

// gemmSerial computes C = alpha·op(A)·op(B) + beta·C on the calling
// goroutine. A is m×k (k×m when transA), B is k×n (n×k when transB), C is
// m×n; lda, ldb and ldc are their row strides. Where the CPU has AVX2 and
// FMA it runs A·Bᵀ as dot products (sdot.go) and the other cases packed
// (sgemm.go); elsewhere gonum's.
func gemmSerial(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	switch {
	case fastDot != nil && transB && !transA && k >= minDotK:
		sgemmDot(fastDot, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case fastKernel != nil:
		kern, rows := kernelFor(m)
		sgemm(kern, rows, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	default:
		gemmGonum(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// packForGemm packs alpha·op(A), m×k, for gemmSerialPacked, into dst
// (grown as needed), or returns nil where gemmSerial would not use it: the
// gonum fallback, and A·Bᵀ from minDotK on (dot products read A in place).
func packForGemm(dst []float32, transA, transB bool, m, k int, alpha float32, a []float32, lda int) []float32 {
	if fastKernel == nil || m == 0 || k == 0 || transB && !transA && fastDot != nil && k >= minDotK {
		return nil
	}
	_, rows := kernelFor(m)
	return packAll(dst, rows, transA, alpha, a, lda, m, k)
}

// kernelFor picks the micro-kernel for a product of m rows: the 8-row one
// (AVX-512) unless m pads to more of its rows than the 6-row one's, so
// that ResNet's 16, 32 and 64 output channels fill whole tiles instead of
// leaving a 4-row edge computed as 6. Both sum every element in the same
// order (by k alone), so the choice never changes a bit.
func kernelFor(m int) (microKernel, int) {
	if fastKernel8 != nil && roundUp(m, 8) <= roundUp(m, mr) {
		return fastKernel8, 8
	}
	return fastKernel, mr
}

// gemmSerialPacked is gemmSerial with A packed by packForGemm with the
// same transA, transB, m, k and alpha (pa nil: packed per call, as
// gemmSerial). The bits are gemmSerial's.
func gemmSerialPacked(pa []float32, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if pa == nil {
		gemmSerial(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	kern, rows := kernelFor(m)
	sgemmPacked(kern, rows, pa, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmGonum is gemmSerial through gonum's Sgemm, tiled so that gonum runs
// each tile on the calling goroutine.
func gemmGonum(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	scaleRows(m, n, beta, c, ldc)
	if k == 0 || alpha == 0 {
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	// Equal tiles: 256 columns as 128+128 rather than 192+64, whose short
	// second tile would run gonum's kernels on short vectors.
	tm := tileM
	if transA && !transB {
		// Aᵀ·B sweeps all of a C tile once per k: keep the tile in L1.
		tm = tileMTransA
	}
	tk := tileK
	if !transA && transB {
		// A·Bᵀ is dot products along k: longer dots, fewer calls.
		tk = tileKDot
	}
	mt, nt, kt := balancedTile(m, tm), balancedTile(n, tileN), balancedTile(k, tk)
	for i0 := 0; i0 < m; i0 += mt {
		mi := min(mt, m-i0)
		for j0 := 0; j0 < n; j0 += nt {
			nj := min(nt, n-j0)
			cs := blas32.General{Rows: mi, Cols: nj, Stride: ldc, Data: c[i0*ldc+j0:]}
			for l0 := 0; l0 < k; l0 += kt {
				kl := min(kt, k-l0)
				as := blas32.General{Stride: lda}
				if transA {
					as.Rows, as.Cols, as.Data = kl, mi, a[l0*lda+i0:]
				} else {
					as.Rows, as.Cols, as.Data = mi, kl, a[i0*lda+l0:]
				}
				bs := blas32.General{Stride: ldb}
				if transB {
					bs.Rows, bs.Cols, bs.Data = nj, kl, b[j0*ldb+l0:]
				} else {
					bs.Rows, bs.Cols, bs.Data = kl, nj, b[l0*ldb+j0:]
				}
				blas32.Gemm(tA, tB, alpha, trimGeneral(as), trimGeneral(bs), 1, cs)
			}
		}
	}
}

// balancedTile splits n into the fewest tiles of at most max and returns
// their common size, rounded up to a multiple of 8 for the SIMD kernels.
func balancedTile(n, max int) int {
	tiles := (n + max - 1) / max
	t := (n + tiles - 1) / tiles
	if r := t % 8; r != 0 && t+8-r <= max {
		t += 8 - r
	}
	return t
}

// trimGeneral cuts g.Data to the extent gonum checks, so views that start
// inside a larger matrix pass its length checks exactly.
func trimGeneral(g blas32.General) blas32.General {
	if g.Rows > 0 && g.Cols > 0 {
		g.Data = g.Data[:(g.Rows-1)*g.Stride+g.Cols]
	}
	return g
}

// gemm is a whole-matrix product over up to workers goroutines (Linear,
// whose batch is not split across workers). With the fast kernel, C's
// columns are split in whole micro-tiles; each element is still summed in
// the order k alone fixes, so the split changes no bits. Without it, gonum
// spreads large products over GOMAXPROCS goroutines itself.
func gemm(workers int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if fastKernel != nil {
		// Below about a million multiply-adds a goroutine costs more than
		// it saves.
		if m*n*k < 1<<20 {
			workers = 1
		}
		tiles := (n + nr - 1) / nr
		parallel(workers, tiles, func(_, lo, hi int) {
			j0, j1 := lo*nr, min(n, hi*nr)
			bs := b[j0:]
			if transB {
				bs = b[j0*ldb:]
			}
			gemmSerial(transA, transB, m, j1-j0, k, alpha, a, lda, bs, ldb, beta, c[j0:], ldc)
		})
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	ar, ac := m, k
	if transA {
		tA = blas.Trans
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		tB = blas.Trans
		br, bc = n, k
	}
	if k == 0 {
		scaleRows(m, n, beta, c, ldc)
		return
	}
	blas32.Gemm(tA, tB, alpha,
		trimGeneral(blas32.General{Rows: ar, Cols: ac, Stride: lda, Data: a}),
		trimGeneral(blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: b}),
		beta, trimGeneral(blas32.General{Rows: m, Cols: n, Stride: ldc, Data: c}))
}

// parallel splits [0, n) into at most workers contiguous ranges and runs
// f(worker, lo, hi) for each, worker 0 on the calling goroutine. The split
// depends only on n and workers, never on scheduling, so reductions done per
// worker and then summed in worker order are reproducible.
func parallel(workers, n int, f func(w, lo, hi int)) {
	workers = min(workers, n)
	if workers <= 1 {
		if n > 0 {
			f(0, 0, n)
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() {
			defer wg.Done()
			f(w, w*n/workers, (w+1)*n/workers)
		}()
	}
	f(0, 0, n/workers)
	wg.Wait()
}

// splits reports how many ranges parallel(workers, n, …) uses.
func splits(workers, n int) int { return max(1, min(workers, n)) }
