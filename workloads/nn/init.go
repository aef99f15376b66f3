package nn

import (
	"math"
	"math/rand/v2"
)

// InitKind selects how a Linear or Conv2d layer initialises its weight.
// Biases always get torch's default, U(±1/√fan_in), as they do in torch
// whatever the weight's init.
type InitKind int

const (
	// InitTorchDefault is torch's reset_parameters for nn.Linear and
	// nn.Conv2d: kaiming_uniform_(a=√5), which works out to U(±1/√fan_in).
	// The MNIST tutorial's accuracy depends on it.
	InitTorchDefault InitKind = iota
	// InitKaimingNormalFanOut is kaiming_normal_(mode="fan_out",
	// nonlinearity="relu"), N(0, 2/fan_out): torchvision's ResNet convs.
	InitKaimingNormalFanOut
	// InitKaimingNormalFanIn is kaiming_normal_() with its defaults,
	// N(0, 2/fan_in): the CIFAR ResNets of He et al. as commonly written.
	InitKaimingNormalFanIn
)

func (k InitKind) String() string {
	switch k {
	case InitTorchDefault:
		return "torch-default"
	case InitKaimingNormalFanOut:
		return "kaiming-normal-fan-out"
	case InitKaimingNormalFanIn:
		return "kaiming-normal-fan-in"
	}
	return "InitKind(?)"
}

func initWeight(kind InitKind, rng *rand.Rand, w []float32, fanIn, fanOut int) {
	switch kind {
	case InitKaimingNormalFanOut:
		normal(rng, w, math.Sqrt(2/float64(fanOut)))
	case InitKaimingNormalFanIn:
		normal(rng, w, math.Sqrt(2/float64(fanIn)))
	default:
		// gain = √(2/(1+a²)) with a = √5, bound = gain·√(3/fan_in) = 1/√fan_in.
		uniform(rng, w, 1/math.Sqrt(float64(fanIn)))
	}
}

func uniform(rng *rand.Rand, w []float32, bound float64) {
	for i := range w {
		w[i] = float32((2*rng.Float64() - 1) * bound)
	}
}

func normal(rng *rand.Rand, w []float32, std float64) {
	for i := range w {
		w[i] = float32(rng.NormFloat64() * std)
	}
}

func fill(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}
