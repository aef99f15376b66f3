package train

import (
	"math"
	"slices"
	"testing"

	"github.com/distbench/distbench/results"
	_ "github.com/distbench/distbench/strategies/tree"
)

// TestDPLearnsAsDDP: DataParallel's step (the master's global loss, its
// gradient scattered, the gradients summed on the master) computes the
// gradient of the same global batch as DDP's averaged allreduce, so with
// the same seed, global batch and recipe the two reach the same parameters
// after N steps, up to float rounding: for LeNet (dropout: every replica
// draws the masks ddp's rank would) and a ResNet (BatchNorm: statistics
// per shard, the master's running statistics), through three strategies.
func TestDPLearnsAsDDP(t *testing.T) {
	for _, tc := range []struct {
		model, strategy string
		np, batch       int
		steps           int
		tests           int // test images: few for the ResNet, whose evaluation costs most under -race
	}{
		{"lenet", "ring", 2, 32, 6, 200},
		{"lenet", "tree", 4, 32, 4, 200},
		{"lenet", "ps", 3, 30, 4, 200},
		{"resnet20", "ring", 2, 8, 3, 16},
	} {
		t.Run(tc.model+"/"+tc.strategy, func(t *testing.T) {
			cfg := Config{Model: tc.model, Dataset: "mnist", Epochs: 1, Batch: tc.batch, LR: 0.05, Momentum: 0.9,
				Seed: 21, MaxSteps: tc.steps, BucketMiB: 0.05, Workers: 1}
			trainSet, testSet := synthetic(384, 1), synthetic(tc.tests, 2)
			cfg.Mode = "ddp"
			ddp := trainWorldOn(t, tc.np, cfg, tc.strategy, nil, trainSet, testSet)
			cfg.Mode = "dp"
			dp := trainWorldOn(t, tc.np, cfg, tc.strategy, nil, trainSet, testSet)
			for r, s := range dp.sums {
				if !s.Identical {
					t.Errorf("dp rank %d: replicas differ after the final broadcast", r)
				}
			}
			want, got := ddp.sums[0].params, dp.sums[0].params
			if len(want) != len(got) || len(want) == 0 {
				t.Fatalf("%d parameters in dp, %d in ddp", len(got), len(want))
			}
			// Float rounding: the sums are taken in other orders (one
			// loss over the global batch against per-shard losses
			// averaged), a few ulps a step, amplified by momentum.
			worst, at := 0.0, 0
			moved := 0.0
			init := initialParams(t, cfg)
			for i := range want {
				d := math.Abs(float64(got[i]-want[i])) / (1e-3 + math.Abs(float64(want[i])))
				if d > worst {
					worst, at = d, i
				}
				moved = math.Max(moved, math.Abs(float64(want[i]-init[i])))
			}
			t.Logf("largest relative difference %.2g (parameter %d); training moved parameters by up to %.3g", worst, at, moved)
			if worst > 1e-3 {
				t.Errorf("parameter %d: dp %v, ddp %v (relative difference %.2g)", at, got[at], want[at], worst)
			}
			if moved < 1e-3 {
				t.Errorf("training moved no parameter by more than %g: the comparison proves nothing", moved)
			}
			if d := math.Abs(dp.sums[0].TestAcc - ddp.sums[0].TestAcc); d > 1.5/float64(tc.tests) { // one image may flip on rounding
				t.Errorf("test accuracy dp %.3f, ddp %.3f", dp.sums[0].TestAcc, ddp.sums[0].TestAcc)
			}
			checkDPRecords(t, dp.steps, tc.np)
		})
	}
}

// initialParams is the model's parameters before training, from cfg's seed.
func initialParams(t *testing.T, cfg Config) []float32 {
	t.Helper()
	set := synthetic(1, 1)
	net, err := newModel(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(net.Data)
}

// checkDPRecords: each step record times all five transfers and they sum
// to its communication, all exposed; each epoch record has every rank's
// wait and the bytes per step, with the master moving at least an equal
// share of them.
func checkDPRecords(t *testing.T, recs []*results.Record, np int) {
	t.Helper()
	var steps, epochs int
	for _, r := range recs {
		if r.Mode != "dp" {
			t.Fatalf("record of mode %q", r.Mode)
		}
		switch r.Kind {
		case results.KindTrainStep:
			steps++
			sum := 0.0
			for _, name := range dpTransfers {
				ms, ok := r.TransferMs[name]
				if !ok || ms <= 0 {
					t.Errorf("step %d: transfer %s: %v ms (recorded %v)", r.Step, name, ms, ok)
				}
				sum += ms
			}
			if len(r.TransferMs) != len(dpTransfers) || math.Abs(sum-r.CommMs) > 1e-6*r.CommMs || r.ExposedMs != r.CommMs {
				t.Errorf("step %d: transfers %v sum to %v; comm %v, exposed %v", r.Step, r.TransferMs, sum, r.CommMs, r.ExposedMs)
			}
			if r.ComputeMs <= 0 || r.Loss <= 0 {
				t.Errorf("step %d: compute %v ms, loss %v", r.Step, r.ComputeMs, r.Loss)
			}
		case results.KindTrainEpoch:
			epochs++
			if len(r.RankExposedMs) != np || len(r.TransferMs) != len(dpTransfers) {
				t.Errorf("epoch %d: rank waits %v, transfers %v", r.Epoch, r.RankExposedMs, r.TransferMs)
			}
			for rank, ms := range r.RankExposedMs {
				if ms <= 0 {
					t.Errorf("epoch %d: rank %d waited %v ms a step", r.Epoch, rank, ms)
				}
			}
			if len(r.WireSentBytes) != np {
				t.Fatalf("epoch %d: wire bytes %v", r.Epoch, r.WireSentBytes)
			}
			// Every transfer starts or ends at the master: at np 2 it
			// moves half of all bytes, as any rank of any pattern would;
			// beyond, more than an equal share.
			if share := r.RankTrafficShare(0); share < 1/float64(np)-1e-9 || (np > 2 && share <= 1/float64(np)) {
				t.Errorf("epoch %d: the master moved %.2f of the bytes, sent %v received %v", r.Epoch, share, r.WireSentBytes, r.WireRecvBytes)
			}
		}
	}
	if steps == 0 || epochs == 0 {
		t.Errorf("%d step and %d epoch records", steps, epochs)
	}
}

// firstSamples keeps a test set's first n images and labels, or all of
// them.
func TestFirstSamples(t *testing.T) {
	set := synthetic(10, 3)
	for _, tc := range []struct{ n, want int }{{0, 10}, {4, 4}, {10, 10}, {25, 10}} {
		sub := firstSamples(set, tc.n)
		if sub.N != tc.want || len(sub.Labels) != tc.want || len(sub.Pixels) != tc.want*28*28 || set.N != 10 {
			t.Errorf("first %d: N %d, %d labels, %d pixels (the set: %d)", tc.n, sub.N, len(sub.Labels), len(sub.Pixels), set.N)
		}
		if tc.want > 0 && (sub.Labels[tc.want-1] != set.Labels[tc.want-1] || &sub.Pixels[0] != &set.Pixels[0]) {
			t.Errorf("first %d: not the set's first images", tc.n)
		}
	}
}
