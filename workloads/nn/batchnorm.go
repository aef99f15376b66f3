package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// BatchNorm2d normalises each channel of NCHW input, as torch.nn.BatchNorm2d
// with eps 1e-5, momentum 0.1 and affine weight and bias.
//
// In training it uses the batch's mean and biased variance and updates the
// running statistics (the running variance with the unbiased estimate, as
// torch does); in evaluation it uses the running statistics. Channels are
// independent, so they are split across workers; sums run in float64, in
// the kernels of bnkern.go.
type BatchNorm2d struct {
	C        int
	Eps      float64
	Momentum float64
	Weight   *Param // γ, [C]
	Bias     *Param // β, [C]

	RunningMean, RunningVar *Buffer
	// Tracked counts the batches seen in training (torch's num_batches_tracked).
	Tracked int64
	// ReLU fuses the ReLU that follows into this layer (NewBatchNorm2dReLU):
	// torch's BatchNorm2d then ReLU, in one pass over the activation each
	// way instead of two (bnrelu.go).
	ReLU bool

	x, out, dx *Tensor
	mean, inv  []float64 // per channel: the statistics the last Forward used
	train      bool
}

// NewBatchNorm2d returns a batch norm over c channels whose parameters are
// named name+".weight", name+".bias" and buffers name+".running_mean",
// name+".running_var".
func NewBatchNorm2d(name string, c int) *BatchNorm2d {
	if c <= 0 {
		panic(fmt.Sprintf("nn: NewBatchNorm2d(%q, %d): bad size", name, c))
	}
	return &BatchNorm2d{
		C: c, Eps: 1e-5, Momentum: 0.1,
		Weight:      newParam(name+".weight", c),
		Bias:        newParam(name+".bias", c),
		RunningMean: &Buffer{Name: name + ".running_mean", Data: make([]float32, c)},
		RunningVar:  &Buffer{Name: name + ".running_var", Data: make([]float32, c)},
	}
}

// NewBatchNorm2dReLU is NewBatchNorm2d followed by a ReLU, fused.
func NewBatchNorm2dReLU(name string, c int) *BatchNorm2d {
	b := NewBatchNorm2d(name, c)
	b.ReLU = true
	return b
}

func (b *BatchNorm2d) Params() []*Param { return []*Param{b.Weight, b.Bias} }

func (b *BatchNorm2d) Buffers() []*Buffer { return []*Buffer{b.RunningMean, b.RunningVar} }

// Init sets γ to 1, β to 0 and the running statistics to (0, 1); it draws
// nothing from rng.
func (b *BatchNorm2d) Init(*rand.Rand) {
	fill(b.Weight.Data, 1)
	clear(b.Bias.Data)
	clear(b.RunningMean.Data)
	fill(b.RunningVar.Data, 1)
	b.Tracked = 0
}

func (b *BatchNorm2d) Forward(ctx *Ctx, x *Tensor) *Tensor {
	n, h, w := dims4("BatchNorm2d", x, b.C)
	hw, m := h*w, n*h*w
	if ctx.Train && m <= 1 {
		panic(fmt.Sprintf("nn: BatchNorm2d %s: training needs more than one value per channel, got input %v", b.Weight.Name, x.Shape))
	}
	b.x, b.train = x, ctx.Train
	b.out = ensure(b.out, x.Shape...)
	b.mean = grow(b.mean, b.C)
	b.inv = grow(b.inv, b.C)
	if ctx.Train {
		b.Tracked++
	}
	parallel(ctx.workers(), b.C, func(_, lo, hi int) {
		for c := lo; c < hi; c++ {
			var mean, invStd float64
			if ctx.Train {
				// One pass for Σx and Σx², the variance as E[x²] − mean²:
				// in float64 over float32 activations the cancellation
				// costs about 2⁻⁵² · E[x²]/variance relative, far below
				// float32's rounding unless |mean| passes 10⁴ standard
				// deviations (a second pass over (x − mean) cost 2% of a
				// ResNet-20 step).
				var s, s2 float64
				for i := 0; i < n; i++ {
					si, s2i := bnSums(x.Data[(i*b.C+c)*hw:(i*b.C+c+1)*hw], 0)
					s += si
					s2 += s2i
				}
				mean = s / float64(m)
				ss := max(0, s2-s*mean) // Σ(x − mean)²
				variance := ss / float64(m)
				invStd = 1 / math.Sqrt(variance+b.Eps)
				mom := b.Momentum
				b.RunningMean.Data[c] = float32((1-mom)*float64(b.RunningMean.Data[c]) + mom*mean)
				b.RunningVar.Data[c] = float32((1-mom)*float64(b.RunningVar.Data[c]) + mom*ss/float64(m-1))
			} else {
				mean = float64(b.RunningMean.Data[c])
				invStd = 1 / math.Sqrt(float64(b.RunningVar.Data[c])+b.Eps)
			}
			b.mean[c], b.inv[c] = mean, invStd
			// y = (x − mean)·invStd·γ + β = x·scale + shift
			scale := float32(invStd * float64(b.Weight.Data[c]))
			shift := b.Bias.Data[c] - float32(mean)*scale
			for i := 0; i < n; i++ {
				off := (i*b.C + c) * hw
				if b.ReLU {
					bnAffineReLU(b.out.Data[off:off+hw], x.Data[off:off+hw], scale, shift)
					continue
				}
				bnAffine(b.out.Data[off:off+hw], x.Data[off:off+hw], scale, shift)
			}
		}
	})
	return b.out
}

func (b *BatchNorm2d) Backward(ctx *Ctx, dy *Tensor) *Tensor {
	if b.x == nil {
		panic("nn: BatchNorm2d.Backward before Forward")
	}
	x := b.x
	n, h, w := dims4("BatchNorm2d", x, b.C)
	hw, m := h*w, float64(n*h*w)
	if len(dy.Data) != len(x.Data) {
		panic(fmt.Sprintf("nn: BatchNorm2d %s: gradient shape %v, want %v", b.Weight.Name, dy.Shape, x.Shape))
	}
	b.dx = ensure(b.dx, x.Shape...)
	parallel(ctx.workers(), b.C, func(_, lo, hi int) {
		for c := lo; c < hi; c++ {
			mean, inv := b.mean[c], b.inv[c]
			var sdy, sdyx float64 // Σdy and Σdy·x̂
			for i := 0; i < n; i++ {
				off := (i*b.C + c) * hw
				var sg, sgx float64
				if b.ReLU {
					sg, sgx = bnDotsMask(dy.Data[off:off+hw], b.out.Data[off:off+hw], x.Data[off:off+hw], mean)
				} else {
					sg, sgx = bnDots(dy.Data[off:off+hw], x.Data[off:off+hw], mean)
				}
				sdy += sg
				sdyx += sgx
			}
			sdyx *= inv
			b.Weight.Grad[c] += float32(sdyx)
			b.Bias.Grad[c] += float32(sdy)
			gamma := float64(b.Weight.Data[c])
			if !b.train {
				// The statistics are constants: dx = dy·γ·invStd.
				k := float32(gamma * inv)
				for i := 0; i < n; i++ {
					off := (i*b.C + c) * hw
					g := dy.Data[off : off+hw]
					if b.ReLU {
						reluGrad(b.out.Data[off:off+hw], g, b.dx.Data[off:off+hw])
						g = b.dx.Data[off : off+hw]
					}
					bnAffine(b.dx.Data[off:off+hw], g, k, 0)
				}
				continue
			}
			// dx = γ·invStd·(dy − Σdy/m − x̂·Σdy·x̂/m), with x̂ = (x − mean)·invStd,
			// written as dx = a·dy + bx·x + c0.
			a := gamma * inv
			bx := -a * inv * sdyx / m // −γ·invStd²·Σdy·x̂/m
			c0 := -a*sdy/m - bx*mean
			fa, fb, fc := float32(a), float32(bx), float32(c0)
			for i := 0; i < n; i++ {
				off := (i*b.C + c) * hw
				if b.ReLU {
					bnBackMask(b.dx.Data[off:off+hw], dy.Data[off:off+hw], b.out.Data[off:off+hw], x.Data[off:off+hw], fa, fb, fc)
					continue
				}
				bnBack(b.dx.Data[off:off+hw], dy.Data[off:off+hw], x.Data[off:off+hw], fa, fb, fc)
			}
		}
	})
	ctx.Ready(b.Weight, b.Bias)
	return b.dx
}
