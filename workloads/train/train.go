package train

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/models"
	"github.com/distbench/distbench/workloads/nn"
)

// Config describes one training run. Batch is the global batch, split
// evenly across ranks.
type Config struct {
	Model     string  `json:"model"`
	Dataset   string  `json:"dataset"`
	DataDir   string  `json:"data_dir,omitempty"` // default data/<dataset>
	Mode      string  `json:"mode"`               // see Modes
	Epochs    int     `json:"epochs"`
	Batch     int     `json:"batch"`
	LR        float64 `json:"lr"`
	Momentum  float64 `json:"momentum"`
	Nesterov  bool    `json:"nesterov,omitempty"`
	Decay     float64 `json:"weight_decay,omitempty"`
	BucketMiB float64 `json:"bucket_mb,omitempty"` // ddp bucket cap; default 25
	Seed      uint64  `json:"seed"`
	// LRSchedule is how the learning rate changes from LR, epoch by epoch,
	// in nn.ParseSchedule's forms: "" or "constant", "step:EVERY:GAMMA",
	// "multistep:M1,M2,...:GAMMA", "cosine" or "cosine:MIN" (annealed over
	// Epochs). See Schedule.
	LRSchedule string `json:"lr_schedule,omitempty"`
	// LRWarmup, if positive, ramps the rate up linearly over the first
	// LRWarmup epochs: epoch e < LRWarmup trains at (e+1)/(LRWarmup+1) of
	// the schedule's rate.
	LRWarmup int `json:"lr_warmup,omitempty"`
	// MaxSteps, if positive, ends each epoch after this many steps (for
	// quick runs; the test set is still evaluated whole).
	MaxSteps int `json:"max_steps,omitempty"`
	// TestSamples, if positive, evaluates on the first TestSamples images
	// of the test set instead of all of it (for quick runs, whose
	// evaluation of a large model would otherwise cost more than their
	// training).
	TestSamples int `json:"test_samples,omitempty"`
	// Augment applies random crop and flip (the CIFAR recipe).
	Augment bool `json:"augment,omitempty"`
	// Workers is the number of goroutines each rank computes with; 0 means
	// this machine's cores divided by the ranks sharing them (all ranks,
	// for a local launch), so ranks do not fight over cores.
	Workers int `json:"workers,omitempty"`
}

// Modes lists the accepted modes.
var Modes = []string{"tutorial", "ddp", "dp", "ps-sync", "ps-async"}

// Validate checks cfg for np ranks before anything runs.
func (c *Config) Validate(np int) error {
	if !contains(models.Names(), c.Model) {
		return fmt.Errorf("unknown model %q (accepted: %s)", c.Model, strings.Join(models.Names(), ", "))
	}
	if !contains(data.Names(), c.Dataset) {
		return fmt.Errorf("unknown dataset %q (accepted: %s)", c.Dataset, strings.Join(data.Names(), ", "))
	}
	if !contains(Modes, c.Mode) {
		return fmt.Errorf("unknown training mode %q (accepted: %s)", c.Mode, strings.Join(Modes, ", "))
	}
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("epochs %d: must be at least 1", c.Epochs)
	case c.Batch < np || c.Batch%np != 0:
		return fmt.Errorf("global batch %d must be a positive multiple of np %d", c.Batch, np)
	case !(c.LR > 0) || math.IsInf(c.LR, 1):
		return fmt.Errorf("lr %g: must be positive and finite", c.LR)
	case c.Momentum < 0 || c.Momentum >= 1:
		return fmt.Errorf("momentum %g: must be in [0, 1)", c.Momentum)
	case c.LRWarmup < 0:
		return fmt.Errorf("lr warm-up of %d epochs: must not be negative", c.LRWarmup)
	case c.TestSamples < 0:
		return fmt.Errorf("test samples %d: must not be negative (0: the whole test set)", c.TestSamples)
	case c.BucketMiB < 0:
		return fmt.Errorf("bucket size %g MiB: must not be negative", c.BucketMiB)
	case strings.HasPrefix(c.Mode, "ps-") && (c.Nesterov || c.Decay != 0):
		return fmt.Errorf("mode %s: the parameter servers run plain SGD with momentum (no Nesterov, no weight decay)", c.Mode)
	}
	if _, err := c.Schedule(); err != nil {
		return err
	}
	return nil
}

// Schedule is the run's learning rate by epoch: epoch e (from 0) trains at
// Schedule().LR(e), the rate LRSchedule gives from LR over Epochs, as a
// torch scheduler stepped once per epoch would. With LRWarmup = W > 0 it
// is wrapped in nn.Warmup with StartFactor 1/(W+1): epochs 0 … W−1 train
// at 1/(W+1), 2/(W+1), … W/(W+1) of the schedule's rate, an even ramp that
// reaches the full rate at epoch W and never trains at 0. (torch's
// LinearLR starts at 1/3 by default; Goyal et al. start at lr/k for k
// workers, which would make the schedule depend on np; this does not.)
func (c *Config) Schedule() (nn.Schedule, error) {
	s, err := nn.ParseSchedule(c.LRSchedule, c.LR, c.Epochs)
	if err != nil {
		return nil, err
	}
	if c.LRWarmup > 0 {
		s = nn.Warmup{Steps: c.LRWarmup, StartFactor: 1 / float64(c.LRWarmup+1), Then: s}
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Summary is what a run ends with, on every rank.
type Summary struct {
	Steps       int
	FinalLoss   float64
	TestLoss    float64
	TestAcc     float64
	ImagesPerS  float64
	ComputeMs   float64 // per step, median
	CommMs      float64
	ExposedMs   float64
	WallSeconds float64
	// WeightsHash is a hash of the final parameters; Identical reports that
	// every rank's hash matched.
	WeightsHash uint64
	Identical   bool

	params []float32 // the final parameters, for tests
}

// Run trains on comm; every rank calls it. On rank 0, emit receives a record
// per step and per epoch.
func Run(ctx context.Context, comm collective.Comm, cfg Config, emit func(*results.Record) error) (*Summary, error) {
	if err := cfg.Validate(comm.Size()); err != nil {
		return nil, err
	}
	dir := cfg.DataDir
	if dir == "" {
		dir = data.DefaultDir(cfg.Dataset)
	}
	trainSet, err := data.Load(cfg.Dataset, dir, data.Train)
	if err != nil {
		return nil, err
	}
	testSet, err := data.Load(cfg.Dataset, dir, data.Test)
	if err != nil {
		return nil, err
	}
	return RunOn(ctx, comm, cfg, trainSet, testSet, emit)
}

// firstSamples is set's first n samples (all of them when n is 0 or at
// least set.N), sharing its memory.
func firstSamples(set *data.Dataset, n int) *data.Dataset {
	if n <= 0 || n >= set.N {
		return set
	}
	sub := *set
	per := set.C * set.H * set.W
	sub.N, sub.Pixels, sub.Labels = n, set.Pixels[:n*per], set.Labels[:n]
	return &sub
}

// RunOn is Run on datasets already loaded (tests make their own).
func RunOn(ctx context.Context, comm collective.Comm, cfg Config, trainSet, testSet *data.Dataset, emit func(*results.Record) error) (*Summary, error) {
	if err := cfg.Validate(comm.Size()); err != nil {
		return nil, err
	}
	n, rank := comm.Size(), comm.Rank()
	testSet = firstSamples(testSet, cfg.TestSamples)
	net, err := newModel(cfg, trainSet)
	if err != nil {
		return nil, err
	}
	net.SeedDropout(cfg.Seed*7919 + uint64(rank))
	net.Ctx.Workers = cfg.Workers
	if net.Ctx.Workers <= 0 {
		net.Ctx.Workers = max(1, runtime.NumCPU()/n)
	}
	// Every replica starts from rank 0's weights, as DDP does.
	if err := comm.Broadcast(ctx, collective.FromFloat32(net.Data), 0); err != nil {
		return nil, fmt.Errorf("broadcasting initial weights: %w", err)
	}
	sched, err := cfg.Schedule()
	if err != nil {
		return nil, err
	}
	opt := &nn.SGD{LR: cfg.LR, Momentum: cfg.Momentum, Nesterov: cfg.Nesterov, WeightDecay: cfg.Decay}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	feed, err := newFeed(cfg, trainSet, n, rank)
	if err != nil {
		return nil, err
	}
	sync, err := newSyncer(cfg, comm, net, trainSet)
	if err != nil {
		return nil, err
	}
	base := results.Record{
		Kind: results.KindTrainStep, Model: cfg.Model, Dataset: cfg.Dataset, Mode: cfg.Mode,
		Strategy: comm.Strategy(), NP: n,
	}
	sum := &Summary{}
	var computeMs, commMs, exposedMs []float64
	start := time.Now()
	step := 0
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		ep, err := feed.epoch(epoch - 1)
		if err != nil {
			return nil, err
		}
		meter, err := startEpochMeter(ctx, comm)
		if err != nil {
			return nil, fmt.Errorf("epoch %d: %w", epoch, err)
		}
		// The schedule steps once per epoch; the servers of the ps modes
		// get the rate with every gradient.
		lr := sched.LR(epoch - 1)
		opt.LR = lr
		net.SetTrain(true)
		for b := ep.nextBatch(); b != nil; b = ep.nextBatch() {
			if cfg.MaxSteps > 0 && b.Number >= cfg.MaxSteps {
				break
			}
			st, err := sync.step(ctx, net, b, lr)
			if err != nil {
				return nil, fmt.Errorf("epoch %d step %d: %w", epoch, step, err)
			}
			if sync.updatesLocally() {
				opt.Step(net.Data, net.Grad)
			}
			st.computeMs += msSince(st.updateStart)
			step++
			computeMs, commMs, exposedMs = append(computeMs, st.computeMs), append(commMs, st.commMs), append(exposedMs, st.exposedMs)
			meter.add(st)
			sum.FinalLoss = float64(st.loss)
			if rank == 0 {
				r := base
				r.Epoch, r.Step, r.Loss, r.LR = epoch, step, float64(st.loss), lr
				r.ComputeMs, r.CommMs, r.ExposedMs = st.computeMs, st.commMs, st.exposedMs
				r.TransferMs = st.transferMs
				r.WallSeconds = time.Since(start).Seconds()
				r.ImagesPerS = float64(cfg.Batch) / (msSince(st.start) / 1e3)
				if err := emit(&r); err != nil {
					return nil, err
				}
			}
		}
		epochStats, err := meter.stop(ctx, comm)
		if err != nil {
			return nil, fmt.Errorf("epoch %d: %w", epoch, err)
		}
		if cfg.Mode == "dp" {
			// The replicas hold the parameters of the last step's
			// broadcast, before the master's update: evaluation (and
			// the final comparison) needs the master's.
			if err := comm.Broadcast(ctx, collective.FromFloat32(net.Data), 0); err != nil {
				return nil, fmt.Errorf("epoch %d: broadcasting the master's parameters: %w", epoch, err)
			}
		}
		tl, ta, err := evaluate(ctx, comm, net, testSet)
		if err != nil {
			return nil, fmt.Errorf("epoch %d evaluation: %w", epoch, err)
		}
		sum.TestLoss, sum.TestAcc = tl, ta
		if rank == 0 {
			r := base
			r.Kind, r.Epoch, r.Step, r.TestLoss, r.TestAcc = results.KindTrainEpoch, epoch, step, tl, ta
			r.Loss, r.LR = sum.FinalLoss, lr
			r.WallSeconds = time.Since(start).Seconds()
			r.ImagesPerS = float64(step*cfg.Batch) / r.WallSeconds
			epochStats.fill(&r)
			if err := emit(&r); err != nil {
				return nil, err
			}
		}
	}
	sum.WallSeconds = time.Since(start).Seconds()
	sum.Steps = step
	sum.ImagesPerS = float64(step*cfg.Batch) / sum.WallSeconds
	sum.ComputeMs, sum.CommMs, sum.ExposedMs = stats.Median(computeMs), stats.Median(commMs), stats.Median(exposedMs)
	sum.WeightsHash = hashWeights(net.Data)
	sum.params = net.Data
	if sum.Identical, err = sameOnAllRanks(ctx, comm, sum.WeightsHash); err != nil {
		return nil, err
	}
	return sum, nil
}

// newModel builds cfg's model for set's images and classes, initialised
// from cfg's seed: every rank builds the same one.
func newModel(cfg Config, set *data.Dataset) (*nn.Net, error) {
	return models.New(cfg.Model, models.Shape{C: set.C, H: set.H, W: set.W}, set.Classes, cfg.Seed)
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

// evaluate computes test loss and accuracy over the whole test set, each
// rank taking every n-th batch, summed across ranks. BatchNorm statistics
// are first made rank 0's, as DDP's broadcast_buffers does, so every rank
// evaluates the same model.
func evaluate(ctx context.Context, comm collective.Comm, net *nn.Net, test *data.Dataset) (loss, acc float64, err error) {
	for _, b := range net.Buffers() {
		if err := comm.Broadcast(ctx, collective.FromFloat32(b.Data), 0); err != nil {
			return 0, 0, fmt.Errorf("broadcasting %s: %w", b.Name, err)
		}
	}
	loader := &data.Loader{Data: test, BatchSize: 500}
	ep, err := loader.Epoch(0)
	if err != nil {
		return 0, 0, err
	}
	var totals [3]float64 // loss sum, correct, count
	for b := ep.Next(); b != nil; b = ep.Next() {
		if b.Number%comm.Size() != comm.Rank() {
			continue
		}
		x := &nn.Tensor{Shape: b.Shape[:], Data: b.X}
		l, c := net.Evaluate(x, b.Labels)
		totals[0] += float64(l) * float64(len(b.Labels))
		totals[1] += float64(c)
		totals[2] += float64(len(b.Labels))
	}
	if err := comm.AllReduce(ctx, collective.FromFloat64(totals[:]), collective.Sum); err != nil {
		return 0, 0, err
	}
	if totals[2] == 0 {
		return 0, 0, fmt.Errorf("empty test set")
	}
	return totals[0] / totals[2], totals[1] / totals[2], nil
}

func hashWeights(w []float32) uint64 {
	h := fnv.New64a()
	if len(w) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w)))
	}
	return h.Sum64()
}

func sameOnAllRanks(ctx context.Context, comm collective.Comm, h uint64) (bool, error) {
	all := collective.NewTensor(collective.Int64, comm.Size())
	if err := comm.AllGather(ctx, all, collective.FromInt64([]int64{int64(h)})); err != nil {
		return false, err
	}
	for _, x := range all.Int64s() {
		if uint64(x) != h {
			return false, nil
		}
	}
	return true, nil
}
