package models

import (
	"fmt"

	"github.com/distbench/distbench/workloads/nn"
)

func init() { Register("lenet", buildLeNet) }

// buildLeNet is the net of PyTorch's MNIST example and its distributed-SGD
// tutorial:
//
//	conv1 1→10 k5, max-pool 2, relu,
//	conv2 10→20 k5, dropout2d, max-pool 2, relu,
//	flatten (320 for 28×28), fc1 →50, relu, dropout, fc2 50→classes,
//	log-softmax, NLL loss
//
// with torch's default init, so that it trains as the tutorial does. Other
// input sizes change only fc1's width.
func buildLeNet(in Shape, classes int) (nn.Layer, nn.Loss, error) {
	h, w, err := spatial(in.H, in.W, 5, 1, 0)
	if err == nil {
		h, w, err = spatial(h, w, 2, 2, 0)
	}
	if err == nil {
		h, w, err = spatial(h, w, 5, 1, 0)
	}
	if err == nil {
		h, w, err = spatial(h, w, 2, 2, 0)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lenet needs at least 12×12 inputs: %w", err)
	}
	conv1 := nn.NewConv2d("conv1", in.C, 10, 5, 1, 0, true)
	conv1.NoInputGrad = true
	return nn.NewSequential(
		conv1, nn.NewMaxPool2d(2, 2, 0), nn.NewReLU(),
		nn.NewConv2d("conv2", 10, 20, 5, 1, 0, true), nn.NewDropout2d(0.5), nn.NewMaxPool2d(2, 2, 0), nn.NewReLU(),
		nn.NewFlatten(),
		nn.NewLinear("fc1", 20*h*w, 50, true), nn.NewReLU(), nn.NewDropout(0.5),
		nn.NewLinear("fc2", 50, classes, true),
		nn.NewLogSoftmax(),
	), &nn.NLLLoss{}, nil
}

func fmtName(prefix string, i int) string { return fmt.Sprintf("%s%d", prefix, i) }
