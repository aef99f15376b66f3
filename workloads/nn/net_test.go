package nn_test

import (
	"slices"
	"testing"

	"github.com/distbench/distbench/workloads/nn"
)

// TestBackwardFrom: DataParallel's split pass, the batch forward in two
// halves, the loss of the whole batch computed once and each half's rows of
// its gradient propagated apart, sums to the same gradient as one
// ForwardBackward of the whole batch (up to float rounding).
func TestBackwardFrom(t *testing.T) {
	build := func() *nn.Net {
		root := nn.NewSequential(nn.NewFlatten(), nn.NewLinear("fc1", 4, 8, true), nn.NewReLU(), nn.NewLinear("fc2", 8, 3, true))
		net, err := nn.NewNet("tiny", root, &nn.CrossEntropyLoss{}, 7)
		if err != nil {
			t.Fatal(err)
		}
		return net
	}
	xs := []float32{0.1, 0.2, 0.3, 0.4, -1, 0, 1, 2, 0.5, -0.5, 0.25, 1, 2, 1, 0, -1}
	labels := []int{0, 2, 1, 2}

	whole := build()
	whole.ZeroGrad()
	want, _ := whole.ForwardBackward(nn.FromSlice(xs, 4, 1, 2, 2), labels)

	split := build()
	split.ZeroGrad()
	var outs []float32
	for h := range 2 {
		out := split.Forward(nn.FromSlice(slices.Clone(xs[8*h:8*h+8]), 2, 1, 2, 2))
		outs = append(outs, out.Data...)
	}
	got := split.Loss.Forward(nn.FromSlice(outs, 4, 3), labels)
	dy := split.Loss.Backward()
	if d := got - want; d > 1e-6 || d < -1e-6 {
		t.Fatalf("loss of the gathered outputs %v, of the whole batch %v", got, want)
	}
	// Only the second half's activations are kept: its rows go back first,
	// then the first half runs forward again (as a replica would have kept
	// its own) and takes its rows.
	split.BackwardFrom(nn.FromSlice(slices.Clone(dy.Data[6:12]), 2, 3))
	split.Forward(nn.FromSlice(slices.Clone(xs[0:8]), 2, 1, 2, 2))
	split.BackwardFrom(nn.FromSlice(slices.Clone(dy.Data[0:6]), 2, 3))
	for i := range whole.Grad {
		if d := whole.Grad[i] - split.Grad[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("grad[%d]: split %v, whole %v", i, split.Grad[i], whole.Grad[i])
		}
	}

	defer func() {
		if recover() == nil {
			t.Error("BackwardFrom with a gradient of the wrong shape did not panic")
		}
	}()
	split.BackwardFrom(nn.FromSlice(make([]float32, 9), 3, 3))
}
