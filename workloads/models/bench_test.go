package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/distbench/distbench/workloads/nn"
)

// benchStep times one training step (zero grad, forward, loss, backward,
// SGD step) on random MNIST-shaped data, and reports images/s besides the
// usual ns/op.
func benchStep(b *testing.B, model string, in Shape, batch int) {
	net, err := New(model, in, 10, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := nn.NewTensor(batch, in.C, in.H, in.W)
	for i := range x.Data {
		x.Data[i] = float32(rng.NormFloat64())
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = rng.IntN(10)
	}
	opt := &nn.SGD{LR: 0.01, Momentum: 0.5}
	step := func() {
		net.ZeroGrad()
		net.ForwardBackward(x, labels)
		opt.Step(net.Data, net.Grad)
	}
	step() // size every buffer outside the timed loop
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		step()
	}
	cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec*1e3, "ms/step")
	b.ReportMetric(float64(batch)/sec, "images/s")
	if cpu > 0 {
		b.ReportMetric(cpu*1e3, "cpu-ms/step")
	}
}

// BenchmarkTrainStep: lenet at batch 64 is the PyTorch-CPU comparison point.
func BenchmarkTrainStep(b *testing.B) {
	for _, tc := range []struct {
		model string
		in    Shape
		batch int
	}{
		{"lenet", MNIST, 64},
		{"mlp", MNIST, 64},
		{"resnet20", CIFAR10, 32},
		{"resnet20", MNIST, 64}, // one rank of np 2 at global batch 128
	} {
		b.Run(fmt.Sprintf("%s/batch=%d", tc.model, tc.batch), func(b *testing.B) { benchStep(b, tc.model, tc.in, tc.batch) })
	}
}
