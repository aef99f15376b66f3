//go:build !amd64 || purego

package nn

func gatherStride2(dst []float32, dstStride int, src []float32, srcStride, n, rows int) {
	gatherStride2Go(dst, dstStride, src, srcStride, n, rows)
}

func scatterAddStride2(dst []float32, dstStride int, src []float32, srcStride, n, rows int) {
	scatterAddStride2Go(dst, dstStride, src, srcStride, n, rows)
}
