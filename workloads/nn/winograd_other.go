//go:build !amd64 || purego

package nn

// useWinograd: without vectorised transforms, im2col and the GEMM are
// faster; the tests turn it on to check the Go transforms.
var useWinograd, winogradAsm = false, false

func winogradIn(v []float32, ld int, x []float32, p *winograd) { winogradInGo(v, ld, x, p) }

func winogradOut(y []float32, m []float32, ld int, p *winograd) { winogradOutGo(y, m, ld, p) }

func winogradOutAdj(mb []float32, ld int, dy []float32, p *winograd) {
	winogradOutAdjGo(mb, ld, dy, p)
}

func winogradInSmall(v []float32, ld int, x []float32, ch, step int, p *winograd) {
	panic("nn: winogradInSmall without the assembly")
}

func winogradOutSmall(y []float32, m []float32, ld, ch, step int, p *winograd) {
	panic("nn: winogradOutSmall without the assembly")
}
