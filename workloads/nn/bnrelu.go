package nn

import "math"

// Batch norm with the ReLU that follows it fused in (BatchNorm2d.ReLU):
// the forward writes max(bn(x), 0) in the affine pass, and the backward
// masks the incoming gradient by the output as it reads it, instead of a
// ReLU layer's own pass over the activation each way. Every element gets
// the unfused pair's arithmetic, so the bits are the same.

// reluMask is the ReLU's gradient for one element: dy where y > 0 (as
// reluGradGo decides it), else +0.
func reluMask(y, dy float32) float32 {
	keep := uint32(-int64(int32(math.Float32bits(y))) >> 63)
	return math.Float32frombits(math.Float32bits(dy) & keep)
}

// bnAffineReLUGo sets dst = max(x·scale + shift, 0).
func bnAffineReLUGo(dst, x []float32, scale, shift float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = max(float32(v*scale)+shift, 0)
	}
}

// bnDotsMaskGo is bnDotsGo over g = reluMask(y, dy).
func bnDotsMaskGo(dy, y, x []float32, mean float64) (sg, sgx float64) {
	x, y = x[:len(dy)], y[:len(dy)]
	var a, b [16]float64
	n16 := len(dy) / 16 * 16
	for i := 0; i < n16; i += 16 {
		for r := 0; r < 16; r++ {
			gv := float64(reluMask(y[i+r], dy[i+r]))
			a[r] += gv
			b[r] += float64(gv * (float64(x[i+r]) - mean))
		}
	}
	return bnDotsMaskTail(dy[n16:], y[n16:], x[n16:], mean, laneTree(&a), laneTree(&b))
}

func bnDotsMaskTail(dy, y, x []float32, mean, sg, sgx float64) (float64, float64) {
	for i, v := range dy {
		gv := float64(reluMask(y[i], v))
		sg += gv
		sgx += float64(gv * (float64(x[i]) - mean))
	}
	return sg, sgx
}

// bnBackMaskGo is bnBackGo over g = reluMask(y, dy).
func bnBackMaskGo(dst, dy, y, x []float32, a, b, c float32) {
	dst, y, x = dst[:len(dy)], y[:len(dy)], x[:len(dy)]
	for i, v := range dy {
		g := reluMask(y[i], v)
		dst[i] = (float32(a*g) + float32(b*x[i])) + c
	}
}
