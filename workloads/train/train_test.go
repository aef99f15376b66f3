package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/results"
	_ "github.com/distbench/distbench/strategies/ps"
	_ "github.com/distbench/distbench/strategies/ring"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/models"
	"github.com/distbench/distbench/workloads/nn"
)

// synthetic is a 28×28 dataset whose class k is a bright 7×7 square in the
// k-th cell of a grid, over noise: learnable in a few steps, made here.
func synthetic(n int, seed uint64) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	d := &data.Dataset{Name: "synthetic", Split: data.Train, N: n, C: 1, H: 28, W: 28, Classes: 4,
		Pixels: make([]uint8, n*28*28), Labels: make([]uint8, n), Mean: []float32{0.2}, Std: []float32{0.3}}
	for i := range n {
		k := rng.IntN(4)
		d.Labels[i] = uint8(k)
		img := d.Pixels[i*784 : (i+1)*784]
		for j := range img {
			img[j] = uint8(rng.IntN(60))
		}
		r0, c0 := 3+(k/2)*14, 3+(k%2)*14
		for r := r0; r < r0+7; r++ {
			for c := c0; c < c0+7; c++ {
				img[r*28+c] = 200 + uint8(rng.IntN(55))
			}
		}
	}
	return d
}

type trainResult struct {
	sums  []*Summary
	steps []*results.Record
}

func trainWorld(t *testing.T, np int, cfg Config) trainResult {
	return trainWorldWith(t, np, cfg, "ring", nil)
}

func trainWorldWith(t *testing.T, np int, cfg Config, strategy string, opts map[string]string) trainResult {
	t.Helper()
	return trainWorldOn(t, np, cfg, strategy, opts, synthetic(384, 1), synthetic(200, 2))
}

func trainWorldOn(t *testing.T, np int, cfg Config, strategy string, opts map[string]string, trainSet, testSet *data.Dataset) trainResult {
	t.Helper()
	trs := transport.NewMemWorld(np, transport.MemOptions{})
	store := newStore(t)
	res := trainResult{sums: make([]*Summary, np)}
	var mu sync.Mutex
	errs := make([]error, np)
	var wg sync.WaitGroup
	// Generous: under -race on a loaded 2-core machine the tutorial mode
	// (an allreduce per parameter) has taken two minutes.
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	for r := range np {
		wg.Go(func() {
			comm, err := collective.New(ctx, strategy, collective.Config{Rank: r, Size: np, Transport: trs[r], Store: store, Options: opts,
				JobID: "train-test", Token: []byte("train-test")})
			if err != nil {
				errs[r] = err
				return
			}
			defer comm.Close()
			res.sums[r], errs[r] = RunOn(ctx, comm, cfg, trainSet, testSet, func(rec *results.Record) error {
				mu.Lock()
				defer mu.Unlock()
				res.steps = append(res.steps, rec)
				return nil
			})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return res
}

func TestTrainModes(t *testing.T) {
	for _, mode := range []string{"tutorial", "ddp"} {
		for _, model := range []string{"mlp", "lenet"} {
			t.Run(mode+"/"+model, func(t *testing.T) {
				cfg := Config{Model: model, Dataset: "mnist", Mode: mode, Epochs: 2, Batch: 32, LR: 0.05, Momentum: 0.5, Seed: 3, BucketMiB: 0.05}
				res := trainWorld(t, 2, cfg)
				s := res.sums[0]
				if !s.Identical || s.WeightsHash != res.sums[1].WeightsHash {
					t.Errorf("replicas differ after synchronous training: %x vs %x", s.WeightsHash, res.sums[1].WeightsHash)
				}
				if s.TestAcc < 0.6 {
					t.Errorf("test accuracy %.2f after 2 epochs of an easy task", s.TestAcc)
				}
				var first, last float64
				var epochs int
				for _, r := range res.steps {
					switch r.Kind {
					case results.KindTrainStep:
						if first == 0 {
							first = r.Loss
						}
						last = r.Loss
						if r.ComputeMs <= 0 || r.CommMs <= 0 || r.ImagesPerS <= 0 || r.ExposedMs > r.CommMs+1e-9 {
							t.Errorf("step %d timing: compute %v comm %v exposed %v img/s %v", r.Step, r.ComputeMs, r.CommMs, r.ExposedMs, r.ImagesPerS)
						}
					case results.KindTrainEpoch:
						epochs++
					}
				}
				if epochs != 2 || last >= first {
					t.Errorf("%d epoch records; loss %v → %v", epochs, first, last)
				}
				if s.Steps != 2*(384/32) {
					t.Errorf("%d steps, want %d", s.Steps, 2*384/32)
				}
			})
		}
	}
}

// TestDeterministic: the same seed and np give the same loss curve.
func TestDeterministic(t *testing.T) {
	cfg := Config{Model: "lenet", Dataset: "mnist", Mode: "ddp", Epochs: 1, Batch: 32, LR: 0.05, Momentum: 0.5, Seed: 11, MaxSteps: 6, BucketMiB: 0.02}
	curve := func() string {
		res := trainWorld(t, 2, cfg)
		s := ""
		for _, r := range res.steps {
			s += fmt.Sprintf("%s %d %.9g %.9g\n", r.Kind, r.Step, r.Loss, r.TestAcc)
		}
		return s + fmt.Sprintf("%x", res.sums[0].WeightsHash)
	}
	if a, b := curve(), curve(); a != b {
		t.Errorf("two runs differ:\n%s\n---\n%s", a, b)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Model: "lenet", Dataset: "mnist", Mode: "ddp", Epochs: 1, Batch: 64, LR: 0.01}
	for _, tc := range []struct {
		name string
		mut  func(*Config)
	}{
		{"model", func(c *Config) { c.Model = "alexnet" }},
		{"dataset", func(c *Config) { c.Dataset = "imagenet" }},
		{"mode", func(c *Config) { c.Mode = "async" }},
		{"epochs", func(c *Config) { c.Epochs = 0 }},
		{"batch", func(c *Config) { c.Batch = 63 }},
		{"lr", func(c *Config) { c.LR = 0 }},
		{"momentum", func(c *Config) { c.Momentum = 1 }},
		{"test samples", func(c *Config) { c.TestSamples = -1 }},
	} {
		c := good
		tc.mut(&c)
		if err := c.Validate(2); err == nil {
			t.Errorf("%s: accepted %+v", tc.name, c)
		}
	}
	if err := good.Validate(2); err != nil {
		t.Error(err)
	}

	// A bad schedule is one line that says what is wrong and what is accepted.
	for _, tc := range []struct {
		schedule string
		warmup   int
		want     string
	}{
		{"exponential:0.9", 0, `lr schedule "exponential:0.9": unknown schedule "exponential" (accepted: constant, step:EVERY:GAMMA, multistep:M1,M2,...:GAMMA, cosine, cosine:MIN)`},
		{"step:0:0.1", 0, `lr schedule "step:0:0.1": EVERY "0" must be a positive integer (accepted: `},
		{"multistep:30,20:0.1", 0, "milestone 20 after 30: milestones must be strictly increasing (accepted: "},
		{"cosine:0.5", 0, `MIN "0.5" must be a rate in [0, 0.01), below the base rate (accepted: `},
		{"step:30:0.1", -1, "lr warm-up of -1 epochs: must not be negative"},
	} {
		c := good
		c.LRSchedule, c.LRWarmup = tc.schedule, tc.warmup
		err := c.Validate(2)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("schedule %q warm-up %d: %v, want one line with %q", tc.schedule, tc.warmup, err, tc.want)
		}
	}
	for _, spec := range []string{"", "constant", "step:30:0.1", "multistep:30,60,80:0.1", "cosine", "cosine:0.001"} {
		c := good
		c.LRSchedule, c.LRWarmup = spec, 5
		if err := c.Validate(2); err != nil {
			t.Errorf("schedule %q: %v", spec, err)
		}
	}
}

// TestConfigSchedule checks the rate of each epoch, warm-up included.
func TestConfigSchedule(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		warmup   int
		want     []float64 // epochs 0, 1, …
	}{
		{"", 0, []float64{0.4, 0.4, 0.4, 0.4, 0.4, 0.4}},
		{"step:2:0.5", 0, []float64{0.4, 0.4, 0.2, 0.2, 0.1, 0.1}},
		{"multistep:1,4:0.1", 0, []float64{0.4, 0.04, 0.04, 0.04, 0.004, 0.004}},
		{"cosine", 0, []float64{0.4, 0.3732050807569, 0.3, 0.2, 0.1, 0.0267949192431}},
		// Warm-up over 3 epochs: 1/4, 2/4, 3/4 of the rate, then all of it.
		{"", 3, []float64{0.1, 0.2, 0.3, 0.4, 0.4, 0.4}},
		// Goyal et al.'s shape: warm-up, then steps (t is not shifted).
		{"multistep:4,5:0.1", 2, []float64{0.4 / 3, 0.8 / 3, 0.4, 0.4, 0.04, 0.004}},
	} {
		c := Config{LR: 0.4, Epochs: 6, LRSchedule: tc.schedule, LRWarmup: tc.warmup}
		s, err := c.Schedule()
		if err != nil {
			t.Fatal(err)
		}
		for e, want := range tc.want {
			if got := s.LR(e); math.Abs(got-want) > 1e-12 {
				t.Errorf("%q warm-up %d: epoch %d at %.13g, want %.13g", tc.schedule, tc.warmup, e, got, want)
			}
		}
	}
}

// TestLRScheduleApplied runs two epochs of step:1:0.1 in every mode: the
// records say epoch 1 trained at lr and epoch 2 at lr/10.
func TestLRScheduleApplied(t *testing.T) {
	for _, tc := range []struct {
		mode, strategy string
		opts           map[string]string
	}{
		{"ddp", "ring", nil},
		{"tutorial", "ring", nil},
		{"ps-sync", "ps", nil},
		{"ps-async", "ps", map[string]string{"staleness": "1"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := Config{Model: "mlp", Dataset: "mnist", Mode: tc.mode, Epochs: 2, Batch: 32, LR: 0.05, Momentum: 0.5,
				Seed: 3, MaxSteps: 2, LRSchedule: "step:1:0.1", Workers: 1}
			res := trainWorldWith(t, 2, cfg, tc.strategy, tc.opts)
			want := map[int]float64{1: 0.05, 2: 0.005}
			var n int
			for _, r := range res.steps {
				if math.Abs(r.LR-want[r.Epoch]) > 1e-15 {
					t.Errorf("%s epoch %d step %d: lr %v, want %v", r.Kind, r.Epoch, r.Step, r.LR, want[r.Epoch])
				}
				n++
			}
			if n != 2*(2+1) {
				t.Errorf("%d records, want 2 epochs × (2 steps + 1 epoch record)", n)
			}
		})
	}
}

// TestLRScheduleUsed checks that the schedule's rate is the one the update
// uses, in a worker-side mode and a server-side one: one rank's training
// under step:1:0.1 ends with exactly the weights of plain SGD run here at
// lr for an epoch's steps, then lr/10.
func TestLRScheduleUsed(t *testing.T) {
	trainSet := synthetic(384, 1)
	cfg := Config{Model: "mlp", Dataset: "mnist", Epochs: 2, Batch: 32, LR: 0.05, Momentum: 0.5, Seed: 7,
		MaxSteps: 3, LRSchedule: "step:1:0.1", Workers: 1}
	want := referenceWeights(t, cfg, trainSet, []float64{0.05, 0.05 * 0.1})
	constant := referenceWeights(t, cfg, trainSet, []float64{0.05, 0.05})
	if want == constant {
		t.Fatal("the reference does not tell the rates apart")
	}
	for _, tc := range []struct{ mode, strategy string }{{"ddp", "ring"}, {"ps-sync", "ps"}} {
		t.Run(tc.mode, func(t *testing.T) {
			c := cfg
			c.Mode = tc.mode
			if got := trainWorldWith(t, 1, c, tc.strategy, nil).sums[0].WeightsHash; got != want {
				t.Errorf("weights %x, want %x (%x at a constant rate)", got, want, constant)
			}
		})
	}
}

// referenceWeights is the hash of the weights that plain SGD reaches on one
// rank, as Run sets it up, at lrs[e] in epoch e.
func referenceWeights(t *testing.T, cfg Config, trainSet *data.Dataset, lrs []float64) uint64 {
	t.Helper()
	net, err := models.New(cfg.Model, models.Shape{C: trainSet.C, H: trainSet.H, W: trainSet.W}, trainSet.Classes, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	net.SeedDropout(cfg.Seed * 7919)
	net.Ctx.Workers = cfg.Workers
	sampler, err := data.NewDistributedSampler(trainSet.N, 1, 0, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	loader := &data.Loader{Data: trainSet, BatchSize: cfg.Batch, Sampler: sampler, Seed: cfg.Seed, DropLast: true}
	opt := &nn.SGD{Momentum: cfg.Momentum}
	for e, lr := range lrs {
		ep, err := loader.Epoch(e)
		if err != nil {
			t.Fatal(err)
		}
		opt.LR = lr
		net.SetTrain(true)
		for b := ep.Next(); b != nil && b.Number < cfg.MaxSteps; b = ep.Next() {
			net.ZeroGrad()
			net.ForwardBackward(&nn.Tensor{Shape: b.Shape[:], Data: b.X}, b.Labels)
			opt.Step(net.Data, net.Grad)
		}
	}
	return hashWeights(net.Data)
}

// newStore is a rendezvous store in this process, for the parameter
// server's addresses.
func newStore(t *testing.T) driver.Store {
	srv, err := rendezvous.Listen("127.0.0.1:0", rendezvous.ServerOptions{JobID: "train-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := rendezvous.Dial(t.Context(), srv.Addr(), rendezvous.ClientOptions{JobID: "train-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestParameterServerModes trains through the parameter server's own
// training API: synchronous keeps the replicas identical; asynchronous with
// a staleness bound still learns.
func TestParameterServerModes(t *testing.T) {
	for _, tc := range []struct {
		mode, staleness string
		identical       bool
	}{
		{"ps-sync", "0", true},
		{"ps-async", "2", false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := Config{Model: "mlp", Dataset: "mnist", Mode: tc.mode, Epochs: 2, Batch: 32, LR: 0.05, Momentum: 0.5, Seed: 5}
			res := trainWorldWith(t, 2, cfg, "ps", map[string]string{"staleness": tc.staleness})
			s := res.sums[0]
			if tc.identical && !s.Identical {
				t.Errorf("synchronous parameter-server training left replicas different")
			}
			if s.TestAcc < 0.6 {
				t.Errorf("test accuracy %.2f after 2 epochs of an easy task", s.TestAcc)
			}
		})
	}
}
