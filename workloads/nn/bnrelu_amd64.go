//go:build amd64 && !purego

package nn

// The kernels in bnrelu_amd64.s, over whole blocks as bnkern_amd64.go's.
//
//go:noescape
func bnAffineReLUAVX2(dst, x *float32, n int, scale, shift float32)

//go:noescape
func bnDotsMaskAVX2(dy, y, x *float32, n int, mean float64) (sg, sgx float64)

//go:noescape
func bnBackMaskAVX2(dst, dy, y, x *float32, n int, a, b, c float32)

func bnAffineReLU(dst, x []float32, scale, shift float32) {
	n8 := len(x) / 8 * 8
	if useAVX2 && n8 > 0 {
		_ = dst[len(x)-1]
		bnAffineReLUAVX2(&dst[0], &x[0], n8/8, scale, shift)
	}
	bnAffineReLUGo(dst[n8:], x[n8:], scale, shift)
}

func bnDotsMask(dy, y, x []float32, mean float64) (sg, sgx float64) {
	n16 := len(dy) / 16 * 16
	if !useAVX2 || n16 == 0 {
		return bnDotsMaskGo(dy, y, x, mean)
	}
	_, _ = y[len(dy)-1], x[len(dy)-1]
	sg, sgx = bnDotsMaskAVX2(&dy[0], &y[0], &x[0], n16/16, mean)
	return bnDotsMaskTail(dy[n16:], y[n16:len(dy)], x[n16:len(dy)], mean, sg, sgx)
}

func bnBackMask(dst, dy, y, x []float32, a, b, c float32) {
	n8 := len(dy) / 8 * 8
	if useAVX2 && n8 > 0 {
		_, _, _ = dst[len(dy)-1], y[len(dy)-1], x[len(dy)-1]
		bnBackMaskAVX2(&dst[0], &dy[0], &y[0], &x[0], n8/8, a, b, c)
	}
	bnBackMaskGo(dst[n8:], dy[n8:], y[n8:], x[n8:], a, b, c)
}
