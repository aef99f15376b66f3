package nn

import "math"

// Element-wise kernels with assembly versions (elemkern_amd64.s) that give
// these bits, NaNs and signed zeros included.

// reluAddGo sets dst = max(a+b, 0) over len(a) elements.
func reluAddGo(dst, a, b []float32) {
	dst, b = dst[:len(a)], b[:len(a)]
	for i, v := range a {
		dst[i] = max(v+b[i], 0)
	}
}

// reluGo sets dst = max(x, 0).
func reluGo(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = max(v, 0)
	}
}

// add3Go sets dst = a + b over len(a) elements.
func add3Go(dst, a, b []float32) {
	dst, b = dst[:len(a)], b[:len(a)]
	for i, v := range a {
		dst[i] = v + b[i]
	}
}

// reluGradGo sets dx = dy where y > 0, else 0.
//
// It selects with a mask rather than a branch, which mispredicts on half the
// elements: y > 0 exactly when y's bits, read as a signed integer, are
// positive (−0 and negatives have the sign bit). Only a positive NaN in y
// differs: it passes dy on where the branch gave 0.
func reluGradGo(y, dy, dx []float32) {
	dy, dx = dy[:len(y)], dx[:len(y)]
	for i, v := range y {
		keep := uint32(-int64(int32(math.Float32bits(v))) >> 63)
		dx[i] = math.Float32frombits(math.Float32bits(dy[i]) & keep)
	}
}
