//go:build !amd64 || purego

package nn

func bnAffineReLU(dst, x []float32, scale, shift float32) { bnAffineReLUGo(dst, x, scale, shift) }

func bnDotsMask(dy, y, x []float32, mean float64) (sg, sgx float64) {
	return bnDotsMaskGo(dy, y, x, mean)
}

func bnBackMask(dst, dy, y, x []float32, a, b, c float32) { bnBackMaskGo(dst, dy, y, x, a, b, c) }
