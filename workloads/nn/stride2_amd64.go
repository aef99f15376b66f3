//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// The stride-2 row kernels in stride2_amd64.s (AVX-512, with BMI2 for the
// tail masks).
//
//go:noescape
func gatherStride2Z(dst *float32, dstStride int, src *float32, srcStride int, n, rows int)

//go:noescape
func scatterAddStride2Z(dst *float32, dstStride int, src *float32, srcStride int, n, rows int)

var useStride2Asm = cpu.X86.HasAVX512F && cpu.X86.HasBMI2

// gatherStride2 sets dst[r·dstStride + j] = src[r·srcStride + 2j] for r <
// rows and j < n: a stride-2 convolution's patch rows.
func gatherStride2(dst []float32, dstStride int, src []float32, srcStride, n, rows int) {
	if n <= 0 || rows <= 0 {
		return
	}
	_ = dst[(rows-1)*dstStride+n-1]
	_ = src[(rows-1)*srcStride+2*n-2]
	if !useStride2Asm {
		gatherStride2Go(dst, dstStride, src, srcStride, n, rows)
		return
	}
	gatherStride2Z(&dst[0], dstStride, &src[0], srcStride, n, rows)
}

// scatterAddStride2 adds src[r·srcStride + j] onto dst[r·dstStride + 2j]
// for r < rows and j < n: gatherStride2's adjoint.
func scatterAddStride2(dst []float32, dstStride int, src []float32, srcStride, n, rows int) {
	if n <= 0 || rows <= 0 {
		return
	}
	_ = dst[(rows-1)*dstStride+2*n-2]
	_ = src[(rows-1)*srcStride+n-1]
	if !useStride2Asm {
		scatterAddStride2Go(dst, dstStride, src, srcStride, n, rows)
		return
	}
	scatterAddStride2Z(&dst[0], dstStride, &src[0], srcStride, n, rows)
}
