package nn_test

import (
	"fmt"

	"github.com/distbench/distbench/workloads/nn"
)

// A training step on a tiny network, with the hook a DDP-style loop uses to
// learn when each gradient is final.
func ExampleNet() {
	root := nn.NewSequential(
		nn.NewFlatten(),
		nn.NewLinear("fc1", 4, 8, true), nn.NewReLU(),
		nn.NewLinear("fc2", 8, 3, true),
	)
	net, err := nn.NewNet("tiny", root, &nn.CrossEntropyLoss{}, 1)
	if err != nil {
		panic(err)
	}
	x := nn.FromSlice([]float32{0.1, 0.2, 0.3, 0.4, -1, 0, 1, 2}, 2, 1, 2, 2)
	labels := []int{0, 2}

	for _, b := range nn.AssignBuckets(net.ReadyOrder(), 64, 64) {
		fmt.Printf("bucket of %d params: Grad[%d:%d]\n", len(b.Params), b.Start, b.End)
	}
	net.OnGradReady(func(p *nn.Param) { fmt.Println("ready:", p.Name) })
	opt := &nn.SGD{LR: 0.1, Momentum: 0.9}
	net.ZeroGrad()
	net.ForwardBackward(x, labels)
	opt.Step(net.Data, net.Grad)
	fmt.Println(net.NumParams(), "parameters")
	// Output:
	// bucket of 2 params: Grad[40:67]
	// bucket of 2 params: Grad[0:40]
	// ready: fc2.bias
	// ready: fc2.weight
	// ready: fc1.bias
	// ready: fc1.weight
	// 67 parameters
}

// The ResNet recipe's schedule: ×0.1 at epochs 30, 60 and 80, stepped once
// per epoch.
func ExampleParseSchedule() {
	sched, err := nn.ParseSchedule("multistep:30,60,80:0.1", 0.1, 90)
	if err != nil {
		panic(err)
	}
	for _, epoch := range []int{0, 29, 30, 60, 89} {
		fmt.Printf("epoch %d: lr %.4g\n", epoch, sched.LR(epoch))
	}
	// Output:
	// epoch 0: lr 0.1
	// epoch 29: lr 0.1
	// epoch 30: lr 0.01
	// epoch 60: lr 0.001
	// epoch 89: lr 0.0001
}
