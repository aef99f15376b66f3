//go:build !amd64 || purego

package nn

// useShiftAsm: no assembly here, so Conv2d keeps imSame and col2imSame.
const useShiftAsm = false

func (m *tapMasks) im2colShift(dst, src []float32, srcStride, t, g int) {
	panic("nn: im2colShift without the assembly")
}

func (m *tapMasks) col2imShift(dst, src []float32, dstStride, t, g int) {
	panic("nn: col2imShift without the assembly")
}
