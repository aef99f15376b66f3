package nn

import "sync"

// The blocked product behind gemmSerial, shaped as BLIS's sgemm: C is cut
// into NC-column slabs, k into KC-deep slices, and rows into MC-row blocks;
// each KC×NC slice of B and MC×KC block of A is packed into micro-panels
// (16 and 6 wide) that a 6×16 register-tile micro-kernel streams through.
// Sizes are BLIS's for AMD Zen (sgemm MC 144, KC 256, NC 4080), which fit
// this machine's caches (lscpu: L1d 48 KiB, L2 1 MiB per core): a 256×16
// micro-panel of B (16 KiB) stays in L1 while the 144×256 A block
// (144 KiB) streams from L2.
const (
	mr      = 6 // the AVX2 kernel's tile height; AVX-512 has an 8-row one too
	maxMR   = 8
	nr      = 16
	mcBlock = 144
	kcBlock = 256
	ncBlock = 4080
)

// microKernel computes C[0:mr, 0:nr] += A·B for a packed A panel (k steps
// of mr floats) and a B panel of k rows of nr floats, ldb apart (nr when
// packed; B's stride when a plain B is read in place), for tiles such
// tiles down C: tile t takes the A panel at a[t·k·mr:] and C's rows from
// t·mr (one call for a whole column of tiles, so that the Go call and its
// bounds checks are paid once, not per tile: k is as small as 16 in
// ResNet-20's dcol = Wᵀ·dY). Each element's sum runs over k in order from
// zero and is then added to C, or stored over it when store is set (C =
// A·B: the first k slice of a product with beta 0, which then needs no
// pass clearing C first; the sum is never −0, so storing it gives the
// bits 0 + sum would).
type microKernel func(k int, a, b []float32, ldb int, c []float32, ldc int, tiles int, store bool)

// packBuf holds one call's packed panels; pooled so the batch workers that
// call gemmSerial at once each get their own.
type packBuf struct {
	a, b []float32
	tile [maxMR * nr]float32
	dot  [dr * dc]float32
}

var packPool = sync.Pool{New: func() any { return new(packBuf) }}

// sgemm computes C = alpha·op(A)·op(B) + beta·C with kern, as gemmSerial.
// Every element of C is summed in an order fixed by k alone (KC slices in
// turn, each in order), never by m, n or which goroutine runs it, so
// splitting C between goroutines gives the same bits.
func sgemm(kern microKernel, rows int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmPacked(kern, rows, nil, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmPacked is sgemm with A already packed, as packAll packs it, when pa
// is not nil (a and lda are then not read): a layer's weights, packed once
// for all the products of a step rather than once a product.
func sgemmPacked(kern microKernel, rows int, pa []float32, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if beta != 0 || k == 0 || alpha == 0 {
		scaleRows(m, n, beta, c, ldc)
		if k == 0 || alpha == 0 {
			return
		}
	}
	buf := packPool.Get().(*packBuf)
	defer packPool.Put(buf)
	kc0 := balancedTile(k, kcBlock)
	for jc := 0; jc < n; jc += ncBlock {
		nc := min(ncBlock, n-jc)
		for pc := 0; pc < k; pc += kc0 {
			kc := min(kc0, k-pc)
			// A plain B's whole panels are read in place: rows of 16
			// floats are what the kernel loads anyway, and packing them
			// would cost more than the product when m is small. Only the
			// ragged last panel, and a transposed B, are packed.
			inPlace, direct := 0, []float32(nil)
			if !transB {
				inPlace, direct = nc/nr*nr, b[pc*ldb+jc:]
			}
			buf.b = grow(buf.b, roundUp(nc, nr)*kc)
			packB(buf.b, transB, b, ldb, pc, jc, kc, nc, inPlace)
			for ic := 0; ic < m; ic += mcBlock {
				mc := min(mcBlock, m-ic)
				ap := pa
				if ap != nil {
					ap = pa[roundUp(m, rows)*pc+ic*kc:]
				} else {
					buf.a = grow(buf.a, roundUp(mc, rows)*kc)
					packA(buf.a, rows, transA, alpha, a, lda, ic, pc, mc, kc)
					ap = buf.a
				}
				macroKernel(kern, rows, mc, nc, kc, ap, buf, direct, ldb, inPlace, c[ic*ldc+jc:], ldc, beta == 0 && pc == 0)
			}
		}
	}
}

// macroKernel runs the micro-kernel over an mc×nc block of C: B's
// micro-panel outer, so it stays in L1 while A's panels pass. Columns
// below inPlace read B from direct (rows ldb apart), the rest from buf.b.
// Edge tiles are computed whole into buf.tile and their valid part added
// to C, the same addition the kernel makes (or stored, when store is set).
func macroKernel(kern microKernel, mr, mc, nc, kc int, ap []float32, buf *packBuf, direct []float32, ldb, inPlace int, c []float32, ldc int, store bool) {
	for jr := 0; jr < nc; jr += nr {
		nn := min(nr, nc-jr)
		bp, bld := buf.b[jr*kc:(jr+nr)*kc], nr
		if jr < inPlace {
			bp, bld = direct[jr:], ldb
		}
		ir := 0
		if full := mc / mr; nn == nr && full > 0 {
			kern(kc, ap, bp, bld, c[jr:], ldc, full, store)
			ir = full * mr
		}
		for ; ir < mc; ir += mr {
			mm := min(mr, mc-ir)
			kern(kc, ap[ir*kc:(ir+mr)*kc], bp, bld, buf.tile[:], nr, 1, true)
			for i := 0; i < mm; i++ {
				row := c[(ir+i)*ldc+jr : (ir+i)*ldc+jr+nn]
				if store {
					copy(row, buf.tile[i*nr:])
					continue
				}
				for j, v := range buf.tile[i*nr : i*nr+nn] {
					row[j] += v
				}
			}
		}
	}
}

// packAll packs alpha·op(A) (m×k) whole, each KC slice's MC blocks as
// sgemm packs them, one after another: slice pc, block ic at
// roundUp(m, mr)·pc + ic·kc.
func packAll(dst []float32, mr int, transA bool, alpha float32, a []float32, lda, m, k int) []float32 {
	mp := roundUp(m, mr)
	dst = grow(dst, mp*k)
	kc0 := balancedTile(k, kcBlock)
	for pc := 0; pc < k; pc += kc0 {
		kc := min(kc0, k-pc)
		for ic := 0; ic < m; ic += mcBlock {
			packA(dst[mp*pc+ic*kc:], mr, transA, alpha, a, lda, ic, pc, min(mcBlock, m-ic), kc)
		}
	}
	return dst
}

// packA packs alpha·op(A)[ic:ic+mc, pc:pc+kc] into mr-row micro-panels,
// each kc steps of mr floats, the last padded with zeros.
func packA(dst []float32, mr int, transA bool, alpha float32, a []float32, lda, ic, pc, mc, kc int) {
	for ir := 0; ir < mc; ir += mr {
		mm := min(mr, mc-ir)
		p := dst[ir*kc : (ir+mr)*kc]
		if transA {
			// op(A)[i][l] = a[l·lda+i]: mm contiguous floats per step.
			for l := 0; l < kc; l++ {
				src := a[(pc+l)*lda+ic+ir : (pc+l)*lda+ic+ir+mm]
				d := p[l*mr : l*mr+mr]
				for i, v := range src {
					d[i] = alpha * v
				}
				clear(d[mm:])
			}
			continue
		}
		for i := 0; i < mr; i++ {
			if i >= mm {
				for l := 0; l < kc; l++ {
					p[l*mr+i] = 0
				}
				continue
			}
			src := a[(ic+ir+i)*lda+pc : (ic+ir+i)*lda+pc+kc]
			for l, v := range src {
				p[l*mr+i] = alpha * v
			}
		}
	}
}

// packB packs op(B)[pc:pc+kc, from:jc+nc] into nr-column micro-panels,
// each kc steps of nr floats, the last padded with zeros; panel jr/nr sits
// at dst[jr·kc:]. Columns below from (a multiple of nr) are left alone.
func packB(dst []float32, transB bool, b []float32, ldb, pc, jc, kc, nc, from int) {
	for jr := from; jr < nc; jr += nr {
		nn := min(nr, nc-jr)
		p := dst[jr*kc : (jr+nr)*kc]
		if !transB {
			for l := 0; l < kc; l++ {
				d := p[l*nr : l*nr+nr]
				copy(d, b[(pc+l)*ldb+jc+jr:(pc+l)*ldb+jc+jr+nn])
				clear(d[nn:])
			}
			continue
		}
		// op(B)[l][j] = b[j·ldb+l]: a row of b fills one lane of every step.
		for j := 0; j < nr; j++ {
			if j >= nn {
				for l := 0; l < kc; l++ {
					p[l*nr+j] = 0
				}
				continue
			}
			src := b[(jc+jr+j)*ldb+pc : (jc+jr+j)*ldb+pc+kc]
			for l, v := range src {
				p[l*nr+j] = v
			}
		}
	}
}

// scaleRows sets C = beta·C on an m×n view, clearing it when beta is 0.
func scaleRows(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// kernelGo is the micro-kernel in plain Go: what the assembly computes,
// for tests of the blocking on any machine; kernelGo8 its 8-row form.
var kernelGo, kernelGo8 = kernelGoRows(mr), kernelGoRows(8)

func kernelGoRows(mr int) microKernel {
	return func(k int, a, b []float32, ldb int, c []float32, ldc int, tiles int, store bool) {
		for t := 0; t < tiles; t++ {
			var acc [maxMR][nr]float32
			at := a[t*k*mr:]
			for l := 0; l < k; l++ {
				bl := b[l*ldb : l*ldb+nr]
				for i := 0; i < mr; i++ {
					ai := at[l*mr+i]
					for j, bv := range bl {
						acc[i][j] += ai * bv
					}
				}
			}
			for i := 0; i < mr; i++ {
				row := c[(t*mr+i)*ldc : (t*mr+i)*ldc+nr]
				if store {
					copy(row, acc[i][:])
					continue
				}
				for j := range row {
					row[j] += acc[i][j]
				}
			}
		}
	}
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

func addToGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}
