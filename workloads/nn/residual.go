package nn

import (
	"fmt"
	"math/rand/v2"
)

// Residual is relu(Main(x) + Shortcut(x)), the ResNet block; a nil Shortcut
// is the identity. [NewBasicBlock] and [NewBottleneck] build torchvision's
// two kinds.
//
// Parameters are registered Main first, then Shortcut (torchvision's
// conv1, bn1, …, downsample order), and Backward runs the shortcut before
// the main branch, so gradients still become ready in exactly the reverse of
// registration order.
type Residual struct {
	Main     *Sequential
	Shortcut Layer

	out, dx *Tensor
	dsum    *Tensor // gradient through the final ReLU
}

func (r *Residual) Forward(c *Ctx, x *Tensor) *Tensor {
	m := r.Main.Forward(c, x)
	s := x
	if r.Shortcut != nil {
		s = r.Shortcut.Forward(c, x)
	}
	if !sameShape(m.Shape, s.Shape) {
		panic(fmt.Sprintf("nn: Residual: main branch gives %v, shortcut %v", m.Shape, s.Shape))
	}
	r.out = ensure(r.out, m.Shape...)
	reluAdd(r.out.Data, m.Data, s.Data)
	return r.out
}

func (r *Residual) Backward(c *Ctx, dy *Tensor) *Tensor {
	r.dsum = ensure(r.dsum, r.out.Shape...)
	reluGrad(r.out.Data, dy.Data, r.dsum.Data)
	ds := r.dsum
	if r.Shortcut != nil {
		ds = r.Shortcut.Backward(c, r.dsum)
	}
	dm := r.Main.Backward(c, r.dsum)
	r.dx = ensure(r.dx, dm.Shape...)
	add3(r.dx.Data, dm.Data, ds.Data)
	return r.dx
}

func (r *Residual) Params() []*Param {
	ps := r.Main.Params()
	if r.Shortcut != nil {
		ps = append(ps, r.Shortcut.Params()...)
	}
	return ps
}

func (r *Residual) Buffers() []*Buffer {
	bs := r.Main.Buffers()
	if r.Shortcut != nil {
		bs = append(bs, buffersOf(r.Shortcut)...)
	}
	return bs
}

func (r *Residual) Init(rng *rand.Rand) {
	r.Main.Init(rng)
	if r.Shortcut != nil {
		r.Shortcut.Init(rng)
	}
}

// Shortcut selects how a residual block matches its input to a main branch
// that changes the shape.
type Shortcut int

const (
	// ShortcutProjection is torchvision's downsample, a strided 1×1 conv and
	// a BatchNorm (option B of He et al.).
	ShortcutProjection Shortcut = iota
	// ShortcutPad subsamples with the stride and zero-pads the new channels,
	// with no parameters (option A, used by the CIFAR ResNets).
	ShortcutPad
)

// NewBasicBlock returns torchvision's BasicBlock: conv3×3(stride)-bn-relu-
// conv3×3-bn plus the shortcut, then relu. Parameter names start with prefix
// (such as "layer1.0."). The shortcut is the identity when stride is 1 and
// in equals planes. Convs use kaiming-normal fan-out init, as torchvision.
func NewBasicBlock(prefix string, in, planes, stride int, sc Shortcut) *Residual {
	conv1 := NewConv2d(prefix+"conv1", in, planes, 3, stride, 1, false)
	conv2 := NewConv2d(prefix+"conv2", planes, planes, 3, 1, 1, false)
	r := &Residual{Main: NewSequential(
		conv1, NewBatchNorm2dReLU(prefix+"bn1", planes),
		conv2, NewBatchNorm2d(prefix+"bn2", planes),
	)}
	r.Shortcut = newShortcut(prefix, in, planes, stride, sc)
	r.SetConvInit(InitKaimingNormalFanOut)
	return r
}

// NewBottleneck returns torchvision's Bottleneck (ResNet v1.5, stride on
// the 3×3): conv1×1-bn-relu-conv3×3(stride)-bn-relu-conv1×1(4·planes)-bn
// plus the shortcut, then relu.
func NewBottleneck(prefix string, in, planes, stride int) *Residual {
	out := 4 * planes
	r := &Residual{Main: NewSequential(
		NewConv2d(prefix+"conv1", in, planes, 1, 1, 0, false), NewBatchNorm2dReLU(prefix+"bn1", planes),
		NewConv2d(prefix+"conv2", planes, planes, 3, stride, 1, false), NewBatchNorm2dReLU(prefix+"bn2", planes),
		NewConv2d(prefix+"conv3", planes, out, 1, 1, 0, false), NewBatchNorm2d(prefix+"bn3", out),
	)}
	r.Shortcut = newShortcut(prefix, in, out, stride, ShortcutProjection)
	r.SetConvInit(InitKaimingNormalFanOut)
	return r
}

func newShortcut(prefix string, in, out, stride int, sc Shortcut) Layer {
	if stride == 1 && in == out {
		return nil
	}
	if sc == ShortcutPad {
		return NewPadShortcut(in, out, stride)
	}
	return NewSequential(
		NewConv2d(prefix+"downsample.0", in, out, 1, stride, 0, false),
		NewBatchNorm2d(prefix+"downsample.1", out),
	)
}

// SetConvInit sets the weight init of every conv in the block.
func (r *Residual) SetConvInit(k InitKind) {
	for _, l := range r.Main.Layers {
		if c, ok := l.(*Conv2d); ok {
			c.WeightInit = k
		}
	}
	if s, ok := r.Shortcut.(*Sequential); ok {
		for _, l := range s.Layers {
			if c, ok := l.(*Conv2d); ok {
				c.WeightInit = k
			}
		}
	}
}

// PadShortcut is the parameter-free shortcut of the CIFAR ResNets (option
// A of He et al.): it takes every stride-th pixel and pads the channels
// from In to Out with zeros, split evenly before and after.
type PadShortcut struct {
	stateless
	In, Out, Stride int

	inShape []int
	out, dx *Tensor
}

// NewPadShortcut returns an option-A shortcut.
func NewPadShortcut(in, out, stride int) *PadShortcut {
	if out < in || (out-in)%2 != 0 || stride <= 0 {
		panic(fmt.Sprintf("nn: NewPadShortcut(%d, %d, %d): channels must grow by an even number", in, out, stride))
	}
	return &PadShortcut{In: in, Out: out, Stride: stride}
}

func (p *PadShortcut) geometry(h, w int) (oh, ow, before int) {
	return (h + p.Stride - 1) / p.Stride, (w + p.Stride - 1) / p.Stride, (p.Out - p.In) / 2
}

func (p *PadShortcut) Forward(_ *Ctx, x *Tensor) *Tensor {
	n, h, w := dims4("PadShortcut", x, p.In)
	oh, ow, before := p.geometry(h, w)
	p.inShape = append(p.inShape[:0], x.Shape...)
	p.out = ensure(p.out, n, p.Out, oh, ow)
	clear(p.out.Data)
	for i := 0; i < n; i++ {
		for c := 0; c < p.In; c++ {
			src := x.Data[(i*p.In+c)*h*w:]
			dst := p.out.Data[(i*p.Out+c+before)*oh*ow:]
			for y := 0; y < oh; y++ {
				for xx := 0; xx < ow; xx++ {
					dst[y*ow+xx] = src[y*p.Stride*w+xx*p.Stride]
				}
			}
		}
	}
	return p.out
}

func (p *PadShortcut) Backward(_ *Ctx, dy *Tensor) *Tensor {
	n, h, w := p.inShape[0], p.inShape[2], p.inShape[3]
	oh, ow, before := p.geometry(h, w)
	p.dx = ensure(p.dx, p.inShape...)
	clear(p.dx.Data)
	for i := 0; i < n; i++ {
		for c := 0; c < p.In; c++ {
			dst := p.dx.Data[(i*p.In+c)*h*w:]
			src := dy.Data[(i*p.Out+c+before)*oh*ow:]
			for y := 0; y < oh; y++ {
				for xx := 0; xx < ow; xx++ {
					dst[y*p.Stride*w+xx*p.Stride] = src[y*ow+xx]
				}
			}
		}
	}
	return p.dx
}
