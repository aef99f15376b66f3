package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// gradCase is one layer whose Backward is checked against central finite
// differences of L = Σ y·r for a fixed random r.
type gradCase struct {
	name    string
	layer   func() Layer
	in      []int
	train   bool
	workers int
	// spread scales the random inputs (default 1).
	spread float64
}

func gradCases() []gradCase {
	conv := func(in, out, k, s, p int, bias bool) func() Layer {
		return func() Layer { return NewConv2d("c", in, out, k, s, p, bias) }
	}
	return []gradCase{
		{name: "linear", layer: func() Layer { return NewLinear("fc", 5, 4, true) }, in: []int{3, 5}},
		{name: "linear-nobias", layer: func() Layer { return NewLinear("fc", 4, 3, false) }, in: []int{2, 4}},
		{name: "conv3x3-s1-p1", layer: conv(2, 3, 3, 1, 1, true), in: []int{2, 2, 5, 5}},
		{name: "conv3x3-s1-p1-3workers", layer: conv(2, 3, 3, 1, 1, true), in: []int{4, 2, 5, 5}, workers: 3},
		{name: "conv3x3-s2-p1-rect", layer: conv(2, 3, 3, 2, 1, false), in: []int{2, 2, 6, 5}},
		{name: "conv1x1-direct", layer: conv(3, 2, 1, 1, 0, true), in: []int{2, 3, 3, 4}},
		{name: "conv1x1-s2", layer: conv(3, 4, 1, 2, 0, false), in: []int{2, 3, 5, 5}},
		{name: "conv5x5-lenet", layer: conv(1, 2, 5, 1, 0, true), in: []int{2, 1, 8, 8}},
		{name: "conv7x7-s2-p3", layer: conv(2, 2, 7, 2, 3, false), in: []int{1, 2, 9, 9}},
		{name: "conv-pad-exceeds", layer: conv(1, 2, 3, 1, 2, true), in: []int{1, 1, 2, 3}},
		{name: "maxpool2", layer: func() Layer { return NewMaxPool2d(2, 0, 0) }, in: []int{2, 2, 4, 6}},
		{name: "maxpool3-s2-p1", layer: func() Layer { return NewMaxPool2d(3, 2, 1) }, in: []int{2, 2, 5, 5}, workers: 3},
		{name: "avgpool2", layer: func() Layer { return NewAvgPool2d(2, 0, 0) }, in: []int{2, 2, 4, 4}},
		{name: "avgpool3-s2-p1", layer: func() Layer { return NewAvgPool2d(3, 2, 1) }, in: []int{1, 2, 5, 6}},
		{name: "globalavgpool", layer: func() Layer { return NewGlobalAvgPool() }, in: []int{2, 3, 3, 2}},
		{name: "batchnorm-train", layer: func() Layer { return NewBatchNorm2d("bn", 3) }, in: []int{3, 3, 2, 2}, train: true},
		{name: "batchnorm-train-2workers", layer: func() Layer { return NewBatchNorm2d("bn", 3) }, in: []int{2, 3, 3, 1}, train: true, workers: 2},
		{name: "batchnorm-eval", layer: func() Layer { return NewBatchNorm2d("bn", 2) }, in: []int{2, 2, 2, 2}},
		{name: "relu", layer: func() Layer { return NewReLU() }, in: []int{2, 7}},
		{name: "dropout", layer: func() Layer { return NewDropout(0.5) }, in: []int{3, 8}, train: true},
		{name: "dropout2d", layer: func() Layer { return NewDropout2d(0.5) }, in: []int{2, 4, 2, 2}, train: true},
		{name: "flatten-linear", layer: func() Layer { return NewSequential(NewFlatten(), NewLinear("fc", 12, 2, true)) }, in: []int{2, 3, 2, 2}},
		{name: "logsoftmax", layer: func() Layer { return NewLogSoftmax() }, in: []int{3, 5}, spread: 3},
		{name: "padshortcut", layer: func() Layer { return NewPadShortcut(2, 4, 2) }, in: []int{2, 2, 5, 4}},
		{name: "basicblock-identity", layer: func() Layer { return NewBasicBlock("b.", 2, 2, 1, ShortcutProjection) }, in: []int{2, 2, 4, 4}, train: true},
		{name: "basicblock-projection", layer: func() Layer { return NewBasicBlock("b.", 2, 4, 2, ShortcutProjection) }, in: []int{2, 2, 4, 4}, train: true},
		{name: "basicblock-pad", layer: func() Layer { return NewBasicBlock("b.", 2, 4, 2, ShortcutPad) }, in: []int{2, 2, 4, 4}, train: true},
		{name: "bottleneck", layer: func() Layer { return NewBottleneck("b.", 4, 2, 2) }, in: []int{2, 4, 4, 4}, train: true, workers: 2},
		{name: "batchnorm-relu-train", layer: func() Layer { return NewBatchNorm2dReLU("bn", 3) }, in: []int{3, 3, 2, 2}, train: true},
		{name: "batchnorm-relu-train-2workers", layer: func() Layer { return NewBatchNorm2dReLU("bn", 3) }, in: []int{2, 3, 3, 1}, train: true, workers: 2},
		{name: "batchnorm-relu-eval", layer: func() Layer { return NewBatchNorm2dReLU("bn", 2) }, in: []int{2, 2, 2, 2}},
		// Through Winograd's F(2×2, 3×3) (8 channels, 13 wide: winogradFits),
		// a ragged last tile row and column.
		{name: "conv3x3-winograd-2workers", layer: conv(8, 8, 3, 1, 1, false), in: []int{2, 8, 13, 13}, workers: 2},
		// A small map (one register of tiles, wgSmall): dW stays im2col's.
		{name: "conv3x3-winograd-small", layer: conv(8, 8, 3, 1, 1, false), in: []int{2, 8, 7, 7}},
	}
}

func TestGradients(t *testing.T) {
	for i, tc := range gradCases() {
		t.Run(tc.name, func(t *testing.T) { checkGradCase(t, i, tc) })
	}
}

// TestGradientsChunked repeats the conv cases with one input channel
// unfolded at a time, so that the products run chunk by chunk.
func TestGradientsChunked(t *testing.T) {
	defer func(old int) { colChunkBytes = old }(colChunkBytes)
	colChunkBytes = 1
	for i, tc := range gradCases() {
		if strings.HasPrefix(tc.name, "conv") || strings.HasPrefix(tc.name, "b") {
			t.Run(tc.name, func(t *testing.T) { checkGradCase(t, i, tc) })
		}
	}
}

func checkGradCase(t *testing.T, i int, tc gradCase) {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	layer := tc.layer()
	net, err := NewNet(tc.name, layer, nil, uint64(i))
	if err != nil {
		t.Fatal(err)
	}
	// Move parameters off their init values (BatchNorm's 1 and 0) so
	// every term of the gradient matters.
	for j := range net.Data {
		net.Data[j] = float32(rng.Float64()*1.5 - 0.75)
	}
	if bn, ok := layer.(*BatchNorm2d); ok {
		for j := range bn.RunningMean.Data {
			bn.RunningMean.Data[j] = float32(rng.Float64() - 0.5)
			bn.RunningVar.Data[j] = float32(0.5 + rng.Float64())
		}
	}
	spread := tc.spread
	if spread == 0 {
		spread = 1
	}
	x := NewTensor(tc.in...)
	for j := range x.Data {
		x.Data[j] = float32((rng.Float64()*2 - 1) * spread)
	}
	ctx := &Ctx{Train: tc.train, Workers: tc.workers}
	if ctx.Workers == 0 {
		ctx.Workers = 1
	}
	forward := func() *Tensor {
		ctx.Rand = rand.New(rand.NewPCG(42, 42)) // the same dropout mask every time
		return layer.Forward(ctx, x)
	}
	y := forward()
	r := make([]float32, len(y.Data))
	for j := range r {
		r[j] = float32(rng.Float64()*2 - 1)
	}
	loss := func() float64 {
		y := forward()
		var s float64
		for j, v := range y.Data {
			s += float64(v) * float64(r[j])
		}
		return s
	}
	var ready []*Param
	ctx.GradReady = func(p *Param) { ready = append(ready, p) }
	net.ZeroGrad()
	forward()
	dx := layer.Backward(ctx, FromSlice(r, y.Shape...))
	ctx.GradReady = nil
	if want := ReadyOrder(net.Param); fmt.Sprint(names(ready)) != fmt.Sprint(names(want)) {
		t.Errorf("gradient-ready order %v, want %v", names(ready), names(want))
	}
	checkNumeric(t, "input", x.Data, dx.Data, loss)
	for _, p := range net.Param {
		checkNumeric(t, p.Name, p.Data, p.Grad, loss)
	}
}

func names(ps []*Param) []string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name
	}
	return s
}

// checkNumeric compares analytic gradients with central differences,
// perturbing each element of v in turn.
func checkNumeric(t *testing.T, what string, v, analytic []float32, loss func() float64) {
	t.Helper()
	const eps = 1e-3
	ana := append([]float32(nil), analytic...)
	bad := 0
	for i := range v {
		orig := v[i]
		v[i] = orig + eps
		lp := loss()
		v[i] = orig - eps
		lm := loss()
		v[i] = orig
		num := (lp - lm) / (2 * eps)
		a := float64(ana[i])
		if d := math.Abs(num - a); d > 4e-3+2e-2*math.Max(math.Abs(num), math.Abs(a)) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d]: analytic %.6g, numeric %.6g", what, i, a, num)
			}
		}
	}
}

func TestLossGradients(t *testing.T) {
	tests := []struct {
		name string
		loss Loss
		// logp feeds log-probabilities, as NLLLoss expects after LogSoftmax.
		logp bool
	}{
		{"nll", &NLLLoss{}, true},
		{"cross-entropy", &CrossEntropyLoss{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 3))
			x := NewTensor(4, 5)
			for i := range x.Data {
				x.Data[i] = float32(rng.NormFloat64() * 2)
			}
			labels := []int{0, 4, 2, 2}
			in := x
			if tc.logp {
				in = NewLogSoftmax().Forward(nil, x)
				x = in
			}
			tc.loss.Forward(in, labels)
			g := tc.loss.Backward()
			checkNumeric(t, "input", x.Data, g.Data, func() float64 { return float64(tc.loss.Forward(x, labels)) })
		})
	}
}
