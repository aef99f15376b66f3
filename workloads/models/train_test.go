package models

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/nn"
)

// TestLeNetLearnsMNIST trains lenet for one epoch on real MNIST with the
// PyTorch example's recipe (batch 64, SGD lr 0.01, momentum 0.5) and checks
// test accuracy. It needs `make data` and about half a minute, so it runs
// only with DISTBENCH_LONG_TESTS=1.
func TestLeNetLearnsMNIST(t *testing.T) {
	if os.Getenv("DISTBENCH_LONG_TESTS") == "" {
		t.Skip("set DISTBENCH_LONG_TESTS=1 to train on MNIST")
	}
	train, err := data.Load("mnist", "../../data/mnist", data.Train)
	if errors.Is(err, data.ErrNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	test, err := data.Load("mnist", "../../data/mnist", data.Test)
	if err != nil {
		t.Fatal(err)
	}
	net, err := New("lenet", MNIST, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	sampler, err := data.NewDistributedSampler(train.Len(), 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	loader := &data.Loader{Data: train, BatchSize: 64, Sampler: sampler}
	opt := &nn.SGD{LR: 0.01, Momentum: 0.5}
	ep, err := loader.Epoch(0)
	if err != nil {
		t.Fatal(err)
	}
	start, steps := time.Now(), 0
	var x nn.Tensor
	for b := ep.Next(); b != nil; b = ep.Next() {
		x.Data, x.Shape = b.X, b.Shape[:]
		net.ZeroGrad()
		loss, _ := net.ForwardBackward(&x, b.Labels)
		opt.Step(net.Data, net.Grad)
		if steps++; steps%200 == 0 {
			t.Logf("step %d: loss %.4f", steps, loss)
		}
	}
	elapsed := time.Since(start)
	t.Logf("epoch: %d steps in %v (%.0f images/s)", steps, elapsed.Round(time.Millisecond), float64(train.Len())/elapsed.Seconds())

	tl := &data.Loader{Data: test, BatchSize: 1000}
	tep, _ := tl.Epoch(0)
	correct, lossSum := 0, 0.0
	for b := tep.Next(); b != nil; b = tep.Next() {
		x.Data, x.Shape = b.X, b.Shape[:]
		l, c := net.Evaluate(&x, b.Labels)
		correct += c
		lossSum += float64(l) * float64(len(b.Labels))
	}
	acc := float64(correct) / float64(test.Len())
	t.Logf("test: loss %.4f, accuracy %.2f%%", lossSum/float64(test.Len()), 100*acc)
	// PyTorch's example reaches about 94-95% after this epoch.
	if acc < 0.93 {
		t.Errorf("accuracy %.2f%% after one epoch, want ≥ 93%%", 100*acc)
	}
}
