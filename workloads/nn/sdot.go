package nn

// A·Bᵀ as dot products. Both operands of C = A·Bᵀ run along k in memory,
// so instead of packing B's transpose (which costs more than the product
// when m is small, as for ResNet-20's dW = dY·colᵀ with 16 rows), a 4×3 tile
// of C is summed straight from 4 rows of A and 3 of B, eight lanes at a time.

// dr×dc is the dot kernel's tile of C.
const (
	dr = 4
	dc = 3
)

// dotKernel sets out[dc·i+j] to Σ a[i][l]·b[j][l] over l < k, for i < dr
// rows of a (lda apart) and j < dc rows of b (ldb apart), in an order set by
// k alone. dotGo and the AVX2 kernel: lane r sums the terms l ≡ r mod 8 of
// l < k rounded down to 8, in order; the lanes o0..o7 are added as
// ((o0+o4)+(o1+o5)) + ((o2+o6)+(o3+o7)); then the rest in order. The
// AVX-512 kernel: 16 lanes over all of k, the last ones masked.
type dotKernel func(k int, a []float32, lda int, b []float32, ldb int, out *[dr * dc]float32)

// sgemmDot computes C = alpha·A·Bᵀ + beta·C, A m×k, B n×k. Every element
// takes the same path whatever its place in a tile (ragged edges are
// copied into zero-padded rows and run through the same kernel), so its
// bits depend on its operands alone.
func sgemmDot(dot dotKernel, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	scaleRows(m, n, beta, c, ldc)
	if k == 0 || alpha == 0 {
		return
	}
	buf := packPool.Get().(*packBuf)
	defer packPool.Put(buf)
	out := &buf.dot // pooled: a local array would escape through dot
	// The ragged last rows of B, padded once.
	nFull := n / dc * dc
	if nFull < n {
		buf.b = padRows(buf.b, b[nFull*ldb:], ldb, n-nFull, dc, k)
	}
	for i0 := 0; i0 < m; i0 += dr {
		mm := min(dr, m-i0)
		ai, alda := a[i0*lda:], lda
		if mm < dr {
			buf.a = padRows(buf.a, ai, lda, mm, dr, k)
			ai, alda = buf.a, k
		}
		for j0 := 0; j0 < n; j0 += dc {
			nn := min(dc, n-j0)
			bj, bld := b[j0*ldb:], ldb
			if j0 >= nFull {
				bj, bld = buf.b, k
			}
			dot(k, ai, alda, bj, bld, out)
			for i := 0; i < mm; i++ {
				crow := c[(i0+i)*ldc+j0 : (i0+i)*ldc+j0+nn]
				for j := range crow {
					crow[j] += alpha * out[i*dc+j]
				}
			}
		}
	}
}

// padRows copies rows (ld apart, k long each) into a dense want×k buffer,
// zero rows after the given ones.
func padRows(dst, src []float32, ld, rows, want, k int) []float32 {
	dst = grow(dst, want*k)
	for i := 0; i < want; i++ {
		d := dst[i*k : (i+1)*k]
		if i < rows {
			copy(d, src[i*ld:i*ld+k])
		} else {
			clear(d)
		}
	}
	return dst
}

// dotGo is the dot kernel in plain Go, for tests on any machine.
func dotGo(k int, a []float32, lda int, b []float32, ldb int, out *[dr * dc]float32) {
	k8 := k / 8
	for i := 0; i < dr; i++ {
		for j := 0; j < dc; j++ {
			var o [8]float32
			for t := 0; t < k8; t++ {
				for r := range o {
					o[r] += a[i*lda+8*t+r] * b[j*ldb+8*t+r]
				}
			}
			out[i*dc+j] = ((o[0] + o[4]) + (o[1] + o[5])) + ((o[2] + o[6]) + (o[3] + o[7]))
		}
	}
	dotTail(k8*8, k, a, lda, b, ldb, out)
}

// dotTail adds the terms k0 ≤ l < k to each out[dc·i+j], in order.
func dotTail(k0, k int, a []float32, lda int, b []float32, ldb int, out *[dr * dc]float32) {
	if k0 == k {
		return
	}
	for i := 0; i < dr; i++ {
		arow := a[i*lda+k0 : i*lda+k]
		for j := 0; j < dc; j++ {
			s := out[i*dc+j]
			for l, v := range b[j*ldb+k0 : j*ldb+k] {
				s += arow[l] * v
			}
			out[i*dc+j] = s
		}
	}
}
