package nn

import (
	"fmt"
)

// MaxPool2d takes the maximum over k×k windows, as torch.nn.MaxPool2d(k,
// stride, padding); padding counts as −∞. The winning index of every window
// is kept for Backward, which routes each gradient to it.
type MaxPool2d struct {
	stateless
	K, Stride, Pad int

	inShape []int
	out, dx *Tensor
	arg     []int32 // index within the input plane of each output's maximum
}

// NewMaxPool2d returns a max pool; stride 0 means stride k, as in torch.
func NewMaxPool2d(k, stride, pad int) *MaxPool2d {
	if stride == 0 {
		stride = k
	}
	if k <= 0 || stride <= 0 || pad < 0 || 2*pad > k {
		panic(fmt.Sprintf("nn: NewMaxPool2d(%d, %d, %d): bad geometry", k, stride, pad))
	}
	return &MaxPool2d{K: k, Stride: stride, Pad: pad}
}

func (m *MaxPool2d) Forward(ctx *Ctx, x *Tensor) *Tensor {
	n, h, w := dims4("MaxPool2d", x, 0)
	c := x.Shape[1]
	oh, ow := ConvOut(h, m.K, m.Stride, m.Pad), ConvOut(w, m.K, m.Stride, m.Pad)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn: MaxPool2d: input %v too small for window %d", x.Shape, m.K))
	}
	m.inShape = append(m.inShape[:0], x.Shape...)
	m.out = ensure(m.out, n, c, oh, ow)
	m.arg = grow(m.arg, n*c*oh*ow)
	out, arg := m.out.Data, m.arg
	parallel(ctx.workers(), n*c, func(_, lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			src := x.Data[pl*h*w : (pl+1)*h*w]
			dst := out[pl*oh*ow : (pl+1)*oh*ow]
			a := arg[pl*oh*ow : (pl+1)*oh*ow]
			if m.K == 2 && m.Stride == 2 && m.Pad == 0 {
				maxPool2x2(src, w, oh, ow, dst, a)
			} else {
				maxPoolPlane(src, h, w, m.K, m.Stride, m.Pad, oh, ow, dst, a)
			}
		}
	})
	return m.out
}

// maxPool2x2 is the common 2×2, stride-2 case (LeNet), unrolled.
func maxPool2x2(src []float32, w, oh, ow int, dst []float32, arg []int32) {
	for oy := 0; oy < oh; oy++ {
		i0 := 2 * oy * w
		r0 := src[i0 : i0+2*ow]
		r1 := src[i0+w : i0+w+2*ow]
		d := dst[oy*ow : oy*ow+ow]
		a := arg[oy*ow : oy*ow+ow]
		for ox := range d {
			j := 2 * ox
			best, bi := r0[j], int32(i0+j)
			if v := r0[j+1]; v > best || v != v {
				best, bi = v, int32(i0+j+1)
			}
			if v := r1[j]; v > best || v != v {
				best, bi = v, int32(i0+w+j)
			}
			if v := r1[j+1]; v > best || v != v {
				best, bi = v, int32(i0+w+j+1)
			}
			d[ox], a[ox] = best, bi
		}
	}
}

// maxPoolPlane pools one plane with any window; padding never wins.
func maxPoolPlane(src []float32, h, w, k, s, pad, oh, ow int, dst []float32, arg []int32) {
	for oy := 0; oy < oh; oy++ {
		y0 := oy*s - pad
		ylo, yhi := max(y0, 0), min(y0+k, h)
		for ox := 0; ox < ow; ox++ {
			x0 := ox*s - pad
			xlo, xhi := max(x0, 0), min(x0+k, w)
			// pad ≤ k/2 keeps every window's first valid cell in range.
			bi := int32(ylo*w + xlo)
			best := src[bi]
			for iy := ylo; iy < yhi; iy++ {
				for ix, v := range src[iy*w+xlo : iy*w+xhi] {
					// NaN wins, as in torch, so it propagates.
					if v > best || (v != v && best == best) {
						best, bi = v, int32(iy*w+xlo+ix)
					}
				}
			}
			dst[oy*ow+ox], arg[oy*ow+ox] = best, bi
		}
	}
}

func (m *MaxPool2d) Backward(ctx *Ctx, dy *Tensor) *Tensor {
	n, c, h, w := m.inShape[0], m.inShape[1], m.inShape[2], m.inShape[3]
	op := len(m.arg) / (n * c)
	if len(dy.Data) != len(m.arg) {
		panic(fmt.Sprintf("nn: MaxPool2d: gradient shape %v, want %v", dy.Shape, m.out.Shape))
	}
	m.dx = ensure(m.dx, m.inShape...)
	parallel(ctx.workers(), n*c, func(_, lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			dst := m.dx.Data[pl*h*w : (pl+1)*h*w]
			clear(dst)
			g := dy.Data[pl*op : (pl+1)*op]
			for j, a := range m.arg[pl*op : (pl+1)*op] {
				dst[a] += g[j]
			}
		}
	})
	return m.dx
}

// AvgPool2d averages over k×k windows, as torch.nn.AvgPool2d(k, stride,
// padding) with its default count_include_pad=True: padded cells count as
// zeros in a divisor of k·k.
type AvgPool2d struct {
	stateless
	K, Stride, Pad int

	inShape []int
	out, dx *Tensor
}

// NewAvgPool2d returns an average pool; stride 0 means stride k.
func NewAvgPool2d(k, stride, pad int) *AvgPool2d {
	if stride == 0 {
		stride = k
	}
	if k <= 0 || stride <= 0 || pad < 0 || 2*pad > k {
		panic(fmt.Sprintf("nn: NewAvgPool2d(%d, %d, %d): bad geometry", k, stride, pad))
	}
	return &AvgPool2d{K: k, Stride: stride, Pad: pad}
}

func (a *AvgPool2d) Forward(ctx *Ctx, x *Tensor) *Tensor {
	n, h, w := dims4("AvgPool2d", x, 0)
	c := x.Shape[1]
	oh, ow := ConvOut(h, a.K, a.Stride, a.Pad), ConvOut(w, a.K, a.Stride, a.Pad)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn: AvgPool2d: input %v too small for window %d", x.Shape, a.K))
	}
	a.inShape = append(a.inShape[:0], x.Shape...)
	a.out = ensure(a.out, n, c, oh, ow)
	inv := 1 / float32(a.K*a.K)
	parallel(ctx.workers(), n*c, func(_, lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			src := x.Data[pl*h*w : (pl+1)*h*w]
			dst := a.out.Data[pl*oh*ow : (pl+1)*oh*ow]
			for oy := 0; oy < oh; oy++ {
				y0 := oy*a.Stride - a.Pad
				for ox := 0; ox < ow; ox++ {
					x0 := ox*a.Stride - a.Pad
					var s float32
					for iy := max(y0, 0); iy < min(y0+a.K, h); iy++ {
						for _, v := range src[iy*w+max(x0, 0) : iy*w+min(x0+a.K, w)] {
							s += v
						}
					}
					dst[oy*ow+ox] = s * inv
				}
			}
		}
	})
	return a.out
}

func (a *AvgPool2d) Backward(ctx *Ctx, dy *Tensor) *Tensor {
	n, c, h, w := a.inShape[0], a.inShape[1], a.inShape[2], a.inShape[3]
	oh, ow := a.out.Shape[2], a.out.Shape[3]
	if len(dy.Data) != n*c*oh*ow {
		panic(fmt.Sprintf("nn: AvgPool2d: gradient shape %v, want %v", dy.Shape, a.out.Shape))
	}
	a.dx = ensure(a.dx, a.inShape...)
	inv := 1 / float32(a.K*a.K)
	parallel(ctx.workers(), n*c, func(_, lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			dst := a.dx.Data[pl*h*w : (pl+1)*h*w]
			clear(dst)
			g := dy.Data[pl*oh*ow : (pl+1)*oh*ow]
			for oy := 0; oy < oh; oy++ {
				y0 := oy*a.Stride - a.Pad
				for ox := 0; ox < ow; ox++ {
					x0 := ox*a.Stride - a.Pad
					v := g[oy*ow+ox] * inv
					for iy := max(y0, 0); iy < min(y0+a.K, h); iy++ {
						row := dst[iy*w+max(x0, 0) : iy*w+min(x0+a.K, w)]
						for j := range row {
							row[j] += v
						}
					}
				}
			}
		}
	})
	return a.dx
}

// GlobalAvgPool averages each channel over its whole plane, giving
// [N, C, 1, 1], as torch.nn.AdaptiveAvgPool2d(1) does at the end of a ResNet.
type GlobalAvgPool struct {
	stateless
	inShape []int
	out, dx *Tensor
}

// NewGlobalAvgPool returns a global average pool.
func NewGlobalAvgPool() *GlobalAvgPool { return &GlobalAvgPool{} }

func (g *GlobalAvgPool) Forward(_ *Ctx, x *Tensor) *Tensor {
	n, h, w := dims4("GlobalAvgPool", x, 0)
	c := x.Shape[1]
	g.inShape = append(g.inShape[:0], x.Shape...)
	g.out = ensure(g.out, n, c, 1, 1)
	hw := h * w
	for pl := 0; pl < n*c; pl++ {
		g.out.Data[pl] = sum32(x.Data[pl*hw:(pl+1)*hw]) / float32(hw)
	}
	return g.out
}

func (g *GlobalAvgPool) Backward(_ *Ctx, dy *Tensor) *Tensor {
	n, c, h, w := g.inShape[0], g.inShape[1], g.inShape[2], g.inShape[3]
	if len(dy.Data) != n*c {
		panic(fmt.Sprintf("nn: GlobalAvgPool: gradient shape %v, want [%d %d 1 1]", dy.Shape, n, c))
	}
	g.dx = ensure(g.dx, g.inShape...)
	hw := h * w
	for pl := 0; pl < n*c; pl++ {
		fill(g.dx.Data[pl*hw:(pl+1)*hw], dy.Data[pl]/float32(hw))
	}
	return g.dx
}
