package nn

import (
	"fmt"
	"math/rand/v2"
)

// Linear is a fully connected layer, y = x·Wᵀ + b, as torch.nn.Linear. Its
// input is [N, In] (Flatten first for images) and its weight [Out, In].
type Linear struct {
	In, Out    int
	Weight     *Param // [Out, In]
	Bias       *Param // [Out], nil without bias
	WeightInit InitKind
	// NoInputGrad skips the input gradient, for a net's first layer.
	NoInputGrad bool

	x, out, dx *Tensor
}

// NewLinear returns a layer whose parameters are named name+".weight" and
// name+".bias".
func NewLinear(name string, in, out int, bias bool) *Linear {
	if in <= 0 || out <= 0 {
		panic(fmt.Sprintf("nn: NewLinear(%q, %d, %d): bad size", name, in, out))
	}
	l := &Linear{In: in, Out: out, Weight: newParam(name+".weight", out, in)}
	if bias {
		l.Bias = newParam(name+".bias", out)
	}
	return l
}

func (l *Linear) Params() []*Param {
	if l.Bias == nil {
		return []*Param{l.Weight}
	}
	return []*Param{l.Weight, l.Bias}
}

func (l *Linear) Init(rng *rand.Rand) {
	initWeight(l.WeightInit, rng, l.Weight.Data, l.In, l.Out)
	if l.Bias != nil {
		uniform(rng, l.Bias.Data, 1/sqrt(float64(l.In)))
	}
}

func (l *Linear) Forward(ctx *Ctx, x *Tensor) *Tensor {
	if len(x.Shape) != 2 || x.Shape[1] != l.In {
		panic(fmt.Sprintf("nn: Linear %s: input shape %v, want [N %d]", l.Weight.Name, x.Shape, l.In))
	}
	n := x.Shape[0]
	l.x = x
	l.out = ensure(l.out, n, l.Out)
	var beta float32
	if l.Bias != nil {
		for i := 0; i < n; i++ {
			copy(l.out.Data[i*l.Out:(i+1)*l.Out], l.Bias.Data)
		}
		beta = 1
	}
	mm(ctx)(false, true, n, l.Out, l.In, 1, x.Data, l.In, l.Weight.Data, l.In, beta, l.out.Data, l.Out)
	return l.out
}

func (l *Linear) Backward(ctx *Ctx, dy *Tensor) *Tensor {
	if l.x == nil {
		panic("nn: Linear.Backward before Forward")
	}
	n := l.x.Shape[0]
	if len(dy.Data) != n*l.Out {
		panic(fmt.Sprintf("nn: Linear %s: gradient shape %v, want [%d %d]", l.Weight.Name, dy.Shape, n, l.Out))
	}
	// dW += dYᵀ · X
	mm(ctx)(true, false, l.Out, l.In, n, 1, dy.Data, l.Out, l.x.Data, l.In, 1, l.Weight.Grad, l.In)
	if l.Bias != nil {
		colSums(dy.Data, n, l.Out, l.Bias.Grad)
	}
	ctx.Ready(l.Weight, l.Bias)
	if l.NoInputGrad {
		return nil
	}
	l.dx = ensure(l.dx, n, l.In)
	mm(ctx)(false, false, n, l.In, l.Out, 1, dy.Data, l.Out, l.Weight.Data, l.In, 0, l.dx.Data, l.In)
	return l.dx
}

// mm picks the product for a whole-batch matrix: serial when the caller
// asked for one worker (several ranks sharing the cores), else spread over
// its workers.
func mm(ctx *Ctx) func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	w := ctx.workers()
	if w == 1 {
		return gemmSerial
	}
	return func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		gemm(w, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// colSums adds the column sums of the rows×cols matrix m into dst, in
// float64 for accuracy.
func colSums(m []float32, rows, cols int, dst []float32) {
	for j := 0; j < cols; j++ {
		var s float64
		for i := 0; i < rows; i++ {
			s += float64(m[i*cols+j])
		}
		dst[j] += float32(s)
	}
}
