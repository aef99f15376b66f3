package models

import (
	"fmt"

	"github.com/distbench/distbench/workloads/nn"
)

func init() {
	Register("resnet20", buildResNet20)
	Register("resnet18", func(in Shape, classes int) (nn.Layer, nn.Loss, error) {
		return buildTorchvisionResNet(in, classes, false, []int{2, 2, 2, 2})
	})
	Register("resnet50", func(in Shape, classes int) (nn.Layer, nn.Loss, error) {
		return buildTorchvisionResNet(in, classes, true, []int{3, 4, 6, 3})
	})
}

// buildResNet20 is the CIFAR ResNet-20 of He et al. (2016, §4.2): a 3×3
// conv to 16 channels, three stages of three BasicBlocks at 16, 32 and 64
// channels (stride 2 entering the last two), global average pooling and a
// linear classifier; 269,722 parameters at 3×32×32 and 10 classes. Shortcuts
// are option A (subsample and zero-pad, no parameters) and weights
// kaiming-normal (fan in), as in the widely used reference implementation
// that reproduces the paper's 91.25%.
func buildResNet20(in Shape, classes int) (nn.Layer, nn.Loss, error) {
	if in.H < 4 || in.W < 4 {
		return nil, nil, fmt.Errorf("resnet20 needs at least 4×4 inputs")
	}
	conv1 := nn.NewConv2d("conv1", in.C, 16, 3, 1, 1, false)
	conv1.WeightInit = nn.InitKaimingNormalFanIn
	conv1.NoInputGrad = true
	s := nn.NewSequential(conv1, nn.NewBatchNorm2dReLU("bn1", 16))
	inC := 16
	for stage, planes := range []int{16, 32, 64} {
		for b := 0; b < 3; b++ {
			stride := 1
			if stage > 0 && b == 0 {
				stride = 2
			}
			blk := nn.NewBasicBlock(fmt.Sprintf("layer%d.%d.", stage+1, b), inC, planes, stride, nn.ShortcutPad)
			blk.SetConvInit(nn.InitKaimingNormalFanIn)
			s.Add(blk)
			inC = planes
		}
	}
	fc := nn.NewLinear("linear", 64, classes, true)
	fc.WeightInit = nn.InitKaimingNormalFanIn
	s.Add(nn.NewGlobalAvgPool(), nn.NewFlatten(), fc)
	return s, &nn.CrossEntropyLoss{}, nil
}

// buildTorchvisionResNet is torchvision.models.resnet18/resnet50 in
// torchvision's layout and parameter names: 7×7/2 conv, batch norm, relu,
// 3×3/2 max pool, four stages (64, 128, 256, 512 planes; BasicBlock or
// Bottleneck ×4, stride on the 3×3 as in v1.5), projection shortcuts,
// global average pool, fc. Convs are kaiming-normal (fan out), the fc
// torch's default. Any input channel count works; tiny inputs work too,
// since the stride-32 stack bottoms out at 1×1.
func buildTorchvisionResNet(in Shape, classes int, bottleneck bool, blocks []int) (nn.Layer, nn.Loss, error) {
	h, w, err := spatial(in.H, in.W, 7, 2, 3)
	if err == nil {
		_, _, err = spatial(h, w, 3, 2, 1)
	}
	if err != nil {
		return nil, nil, err
	}
	conv1 := nn.NewConv2d("conv1", in.C, 64, 7, 2, 3, false)
	conv1.WeightInit = nn.InitKaimingNormalFanOut
	conv1.NoInputGrad = true
	s := nn.NewSequential(conv1, nn.NewBatchNorm2dReLU("bn1", 64), nn.NewMaxPool2d(3, 2, 1))
	inC := 64
	for stage, n := range blocks {
		planes := 64 << stage
		for b := 0; b < n; b++ {
			stride := 1
			if stage > 0 && b == 0 {
				stride = 2
			}
			prefix := fmt.Sprintf("layer%d.%d.", stage+1, b)
			if bottleneck {
				s.Add(nn.NewBottleneck(prefix, inC, planes, stride))
				inC = 4 * planes
			} else {
				s.Add(nn.NewBasicBlock(prefix, inC, planes, stride, nn.ShortcutProjection))
				inC = planes
			}
		}
	}
	s.Add(nn.NewGlobalAvgPool(), nn.NewFlatten(), nn.NewLinear("fc", inC, classes, true))
	return s, &nn.CrossEntropyLoss{}, nil
}
