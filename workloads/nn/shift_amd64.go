//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// The shifted-row kernels in shift_amd64.s (AVX-512).
//
//go:noescape
func im2colShiftZ(dst, src *float32, srcStride, d int, masks *uint16, blocks, p, images int, last uint16)

//go:noescape
func col2imShiftZ(dst, src *float32, dstStride, d int, masks *uint16, blocks, p, images int)

var useShiftAsm = cpu.X86.HasAVX512F

// im2colShift writes patch row t of g images (see tapMasks) into dst,
// image j at dst[j·p:], from the images' channel planes srcStride apart
// in src: im2col's imSame for a whole group in one call. Only where
// useShiftAsm.
func (m *tapMasks) im2colShift(dst, src []float32, srcStride, t, g int) {
	if g == 0 {
		return
	}
	_ = dst[g*m.p-1]
	_ = src[(g-1)*srcStride+m.p-1]
	im2colShiftZ(&dst[0], &src[0], srcStride, m.d[t], &m.bits[t*m.blocks], m.blocks, m.p, g, m.last)
}

// col2imShift adds patch row t of g images (image j at src[j·p:]) onto the
// images' channel planes, dstStride apart in dst: im2colShift's adjoint.
// Only where useShiftAsm.
func (m *tapMasks) col2imShift(dst, src []float32, dstStride, t, g int) {
	if g == 0 {
		return
	}
	_ = dst[(g-1)*dstStride+m.p-1]
	_ = src[g*m.p-1]
	col2imShiftZ(&dst[0], &src[0], dstStride, m.d[t], &m.bits[t*m.blocks], m.blocks, m.p, g)
}
