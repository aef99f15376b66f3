//go:build amd64 && !purego

package nn

// The kernels in elemkern_amd64.s, over n blocks of 8; the wrappers check
// the extents and do the rest in Go.
//
//go:noescape
func reluAddAVX2(dst, a, b *float32, n int)

//go:noescape
func reluAVX2(dst, x *float32, n int)

//go:noescape
func add3AVX2(dst, a, b *float32, n int)

//go:noescape
func reluGradAVX2(y, dy, dx *float32, n int)

func reluAdd(dst, a, b []float32) {
	n8 := len(a) / 8 * 8
	if useAVX2 && n8 > 0 {
		_, _ = dst[len(a)-1], b[len(a)-1]
		reluAddAVX2(&dst[0], &a[0], &b[0], n8/8)
	}
	reluAddGo(dst[n8:], a[n8:], b[n8:])
}

func relu(dst, x []float32) {
	n8 := len(x) / 8 * 8
	if useAVX2 && n8 > 0 {
		_ = dst[len(x)-1]
		reluAVX2(&dst[0], &x[0], n8/8)
	}
	reluGo(dst[n8:], x[n8:])
}

func add3(dst, a, b []float32) {
	n8 := len(a) / 8 * 8
	if useAVX2 && n8 > 0 {
		_, _ = dst[len(a)-1], b[len(a)-1]
		add3AVX2(&dst[0], &a[0], &b[0], n8/8)
	}
	add3Go(dst[n8:], a[n8:], b[n8:])
}

func reluGrad(y, dy, dx []float32) {
	n8 := len(y) / 8 * 8
	if useAVX2 && n8 > 0 {
		_, _ = dy[len(y)-1], dx[len(y)-1]
		reluGradAVX2(&y[0], &dy[0], &dx[0], n8/8)
	}
	reluGradGo(y[n8:], dy[n8:], dx[n8:])
}
