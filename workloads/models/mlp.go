package models

import "github.com/distbench/distbench/workloads/nn"

func init() { Register("mlp", buildMLP) }

// MLPHidden are the hidden widths of "mlp".
var MLPHidden = []int{512, 256}

// buildMLP is flatten → (linear → relu) per hidden width → linear, with
// cross-entropy on the logits and torch's default init.
func buildMLP(in Shape, classes int) (nn.Layer, nn.Loss, error) {
	s := nn.NewSequential(nn.NewFlatten())
	width := in.C * in.H * in.W
	for i, h := range MLPHidden {
		l := nn.NewLinear(fmtName("fc", i+1), width, h, true)
		l.NoInputGrad = i == 0
		s.Add(l, nn.NewReLU())
		width = h
	}
	s.Add(nn.NewLinear(fmtName("fc", len(MLPHidden)+1), width, classes, true))
	return s, &nn.CrossEntropyLoss{}, nil
}
