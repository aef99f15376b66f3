//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// The kernels in bnkern_amd64.s; n counts whole blocks (16 elements for the
// sums, 8 for the element-wise ones), the wrappers do the rest in Go.
//
//go:noescape
func bnSumsAVX2(x *float32, n int, mean float64) (s, ss float64)

//go:noescape
func bnDotsAVX2(dy, x *float32, n int, mean float64) (sg, sgx float64)

//go:noescape
func bnAffineAVX2(dst, x *float32, n int, scale, shift float32)

//go:noescape
func bnBackAVX2(dst, dy, x *float32, n int, a, b, c float32)

// useAVX2: these kernels and elemkern_amd64.s's need AVX2's 256-bit
// float64 and float32 arithmetic (no FMA: products are rounded before they
// are added, as in Go).
var useAVX2 = cpu.X86.HasAVX2

func bnSums(x []float32, mean float64) (s, ss float64) {
	n16 := len(x) / 16 * 16
	if !useAVX2 || n16 == 0 {
		return bnSumsGo(x, mean)
	}
	s, ss = bnSumsAVX2(&x[0], n16/16, mean)
	return bnSumsTail(x[n16:], mean, s, ss)
}

func bnDots(g, x []float32, mean float64) (sg, sgx float64) {
	n16 := len(g) / 16 * 16
	if !useAVX2 || n16 == 0 {
		return bnDotsGo(g, x, mean)
	}
	_ = x[len(g)-1]
	sg, sgx = bnDotsAVX2(&g[0], &x[0], n16/16, mean)
	return bnDotsTail(g[n16:], x[n16:len(g)], mean, sg, sgx)
}

func bnAffine(dst, x []float32, scale, shift float32) {
	n8 := len(x) / 8 * 8
	if useAVX2 && n8 > 0 {
		_ = dst[len(x)-1]
		bnAffineAVX2(&dst[0], &x[0], n8/8, scale, shift)
	}
	bnAffineGo(dst[n8:], x[n8:], scale, shift)
}

func bnBack(dst, g, x []float32, a, b, c float32) {
	n8 := len(g) / 8 * 8
	if useAVX2 && n8 > 0 {
		_, _ = dst[len(g)-1], x[len(g)-1]
		bnBackAVX2(&dst[0], &g[0], &x[0], n8/8, a, b, c)
	}
	bnBackGo(dst[n8:], g[n8:], x[n8:], a, b, c)
}
