//go:build amd64 && !purego

package nn

// The transforms in winograd_amd64.s (AVX-512).
//
//go:noescape
func winogradInZ(v *float32, ld int, x *float32, h, w, th, tw int, masks *uint16)

//go:noescape
func winogradOutAdjZ(mb *float32, ld int, dy *float32, h, w, th, tw int, masks *uint16)

//go:noescape
func winogradInSmallZ(v *float32, ld int, x *float32, planes, hw, step int, tab *wgSmall)

//go:noescape
func winogradOutSmallZ(y *float32, ld int, m *float32, planes, hw, step int, tab *wgSmall)

//go:noescape
func winogradOutZ(y *float32, ld int, m *float32, h, w, th, tw int, masks *uint16)

// useWinograd: Conv2d runs its same-size 3×3 convolutions through F(2×2,
// 3×3) where the transforms are vectorised (winogradFits); winogradAsm:
// the transforms are (the tests turn it off to run the Go ones).
var (
	useWinograd = useShiftAsm
	winogradAsm = useShiftAsm
)

// winogradIn is winogradInGo (v[ξ·ld + tile]) by the assembly where the
// CPU has it.
func winogradIn(v []float32, ld int, x []float32, p *winograd) {
	if !winogradAsm {
		winogradInGo(v, ld, x, p)
		return
	}
	tt := p.th * p.tw
	_ = v[15*ld+tt-1]
	_ = x[p.h*p.w-1]
	winogradInZ(&v[0], ld, &x[0], p.h, p.w, p.th, p.tw, &p.inMask[0])
}

// winogradOut is winogradOutGo by the assembly where the CPU has it.
func winogradOut(y []float32, m []float32, ld int, p *winograd) {
	if !winogradAsm {
		winogradOutGo(y, m, ld, p)
		return
	}
	tt := p.th * p.tw
	_ = m[15*ld+tt-1]
	_ = y[p.h*p.w-1]
	winogradOutZ(&y[0], ld, &m[0], p.h, p.w, p.th, p.tw, &p.outMsk[0])
}

// winogradOutAdj is winogradOutAdjGo by the assembly where the CPU has it.
func winogradOutAdj(mb []float32, ld int, dy []float32, p *winograd) {
	if !winogradAsm {
		winogradOutAdjGo(mb, ld, dy, p)
		return
	}
	tt := p.th * p.tw
	_ = mb[15*ld+tt-1]
	_ = dy[p.h*p.w-1]
	winogradOutAdjZ(&mb[0], ld, &dy[0], p.h, p.w, p.th, p.tw, &p.outMsk[0])
}

// The small maps' kernels (wgSmall), ch planes of one image at a time: the
// plane k's values at ξ·ld + k·step.

func winogradInSmall(v []float32, ld int, x []float32, ch, step int, p *winograd) {
	hw, tt := p.h*p.w, p.th*p.tw
	_ = v[15*ld+(ch-1)*step+tt-1]
	_ = x[ch*hw-1]
	winogradInSmallZ(&v[0], ld, &x[0], ch, hw, step, p.small)
}

func winogradOutSmall(y []float32, m []float32, ld, ch, step int, p *winograd) {
	hw, tt := p.h*p.w, p.th*p.tw
	_ = m[15*ld+(ch-1)*step+tt-1]
	_ = y[ch*hw-1]
	winogradOutSmallZ(&y[0], ld, &m[0], ch, hw, step, p.small)
}
