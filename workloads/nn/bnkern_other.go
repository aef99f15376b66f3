//go:build !amd64 || purego

package nn

func bnSums(x []float32, mean float64) (s, ss float64)      { return bnSumsGo(x, mean) }
func bnDots(g, x []float32, mean float64) (sg, sgx float64) { return bnDotsGo(g, x, mean) }
func bnAffine(dst, x []float32, scale, shift float32)       { bnAffineGo(dst, x, scale, shift) }
func bnBack(dst, g, x []float32, a, b, c float32)           { bnBackGo(dst, g, x, a, b, c) }
