package nn

import (
	"fmt"
	"math"
)

// ReLU is max(x, 0), element-wise.
type ReLU struct {
	stateless
	out, dx *Tensor
}

// NewReLU returns a ReLU.
func NewReLU() *ReLU { return &ReLU{} }

func (r *ReLU) Forward(_ *Ctx, x *Tensor) *Tensor {
	r.out = ensure(r.out, x.Shape...)
	relu(r.out.Data, x.Data)
	return r.out
}

func (r *ReLU) Backward(_ *Ctx, dy *Tensor) *Tensor {
	r.dx = ensure(r.dx, r.out.Shape...)
	reluGrad(r.out.Data, dy.Data, r.dx.Data)
	return r.dx
}

// Dropout zeroes each element with probability P in training and scales the
// survivors by 1/(1−P), as torch.nn.Dropout; in evaluation it is the
// identity. Masks come from Ctx.Rand.
type Dropout struct {
	stateless
	P float64
	// Channel drops whole channels of NCHW input, as torch.nn.Dropout2d.
	Channel bool

	mask    []float32 // 0 or 1/(1−P) per element (per channel when Channel)
	inner   int       // elements per mask entry
	train   bool
	out, dx *Tensor
}

// NewDropout returns element-wise dropout with probability p.
func NewDropout(p float64) *Dropout {
	if p < 0 || p >= 1 {
		panic(fmt.Sprintf("nn: NewDropout(%v): p must be in [0, 1)", p))
	}
	return &Dropout{P: p}
}

// NewDropout2d returns channel-wise dropout with probability p.
func NewDropout2d(p float64) *Dropout {
	d := NewDropout(p)
	d.Channel = true
	return d
}

func (d *Dropout) Forward(ctx *Ctx, x *Tensor) *Tensor {
	d.train = ctx.Train && d.P > 0
	if !d.train {
		return x
	}
	if ctx.Rand == nil {
		panic("nn: Dropout in training needs Ctx.Rand")
	}
	d.inner = 1
	if d.Channel {
		if len(x.Shape) < 3 {
			panic(fmt.Sprintf("nn: Dropout2d: input shape %v, want [N C H W]", x.Shape))
		}
		d.inner = numel(x.Shape[2:])
	}
	d.mask = grow(d.mask, len(x.Data)/d.inner)
	scale := float32(1 / (1 - d.P))
	for i := range d.mask {
		if ctx.Rand.Float64() < d.P {
			d.mask[i] = 0
		} else {
			d.mask[i] = scale
		}
	}
	d.out = ensure(d.out, x.Shape...)
	applyMask(d.mask, d.inner, x.Data, d.out.Data)
	return d.out
}

func (d *Dropout) Backward(_ *Ctx, dy *Tensor) *Tensor {
	if !d.train {
		return dy
	}
	d.dx = ensure(d.dx, dy.Shape...)
	applyMask(d.mask, d.inner, dy.Data, d.dx.Data)
	return d.dx
}

func applyMask(mask []float32, inner int, src, dst []float32) {
	if inner == 1 {
		src, dst = src[:len(mask)], dst[:len(mask)]
		for i, m := range mask {
			dst[i] = src[i] * m
		}
		return
	}
	for i, m := range mask {
		s, t := src[i*inner:(i+1)*inner], dst[i*inner:(i+1)*inner]
		for j, v := range s {
			t[j] = v * m
		}
	}
}

// Flatten reshapes [N, …] to [N, rest] without copying, as
// torch.flatten(x, 1).
type Flatten struct {
	stateless
	inShape []int
	out, dx Tensor
}

// NewFlatten returns a Flatten.
func NewFlatten() *Flatten { return &Flatten{} }

func (f *Flatten) Forward(_ *Ctx, x *Tensor) *Tensor {
	f.inShape = append(f.inShape[:0], x.Shape...)
	f.out.Shape = append(f.out.Shape[:0], x.Shape[0], numel(x.Shape[1:]))
	f.out.Data = x.Data
	return &f.out
}

func (f *Flatten) Backward(_ *Ctx, dy *Tensor) *Tensor {
	f.dx.Shape = append(f.dx.Shape[:0], f.inShape...)
	f.dx.Data = dy.Data
	return &f.dx
}

// LogSoftmax is log(softmax(x)) along the last dimension of [N, K] input.
type LogSoftmax struct {
	stateless
	out, dx *Tensor
}

// NewLogSoftmax returns a LogSoftmax.
func NewLogSoftmax() *LogSoftmax { return &LogSoftmax{} }

func (l *LogSoftmax) Forward(_ *Ctx, x *Tensor) *Tensor {
	if len(x.Shape) != 2 {
		panic(fmt.Sprintf("nn: LogSoftmax: input shape %v, want [N K]", x.Shape))
	}
	l.out = ensure(l.out, x.Shape...)
	k := x.Shape[1]
	for i := 0; i < x.Shape[0]; i++ {
		logSoftmaxRow(x.Data[i*k:(i+1)*k], l.out.Data[i*k:(i+1)*k])
	}
	return l.out
}

// logSoftmaxRow writes x − max − log Σ exp(x − max), stable for any x.
func logSoftmaxRow(x, y []float32) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v - m))
	}
	lse := m + float32(math.Log(s))
	for j, v := range x {
		y[j] = v - lse
	}
}

func (l *LogSoftmax) Backward(_ *Ctx, dy *Tensor) *Tensor {
	l.dx = ensure(l.dx, l.out.Shape...)
	k := l.out.Shape[1]
	for i := 0; i < l.out.Shape[0]; i++ {
		y, g, dst := l.out.Data[i*k:(i+1)*k], dy.Data[i*k:(i+1)*k], l.dx.Data[i*k:(i+1)*k]
		// dx = dy − softmax·Σdy
		s := sum32(g)
		for j, v := range y {
			dst[j] = g[j] - float32(math.Exp(float64(v)))*s
		}
	}
	return l.dx
}
