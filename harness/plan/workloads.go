package plan

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/peers"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/models"
	"github.com/distbench/distbench/workloads/train"
)

// modelInputs are the input shapes a gradient block may name.
var modelInputs = map[string]models.Shape{
	"mnist": models.MNIST, "fashion-mnist": models.MNIST, "cifar10": models.CIFAR10, "imagenet": models.ImageNet,
}

// defaultInput is each built-in model's usual input.
var defaultInput = map[string]string{
	"mlp": "mnist", "lenet": "mnist", "resnet20": "cifar10", "resnet18": "imagenet", "resnet50": "imagenet",
}

func parseShape(s string) (models.Shape, error) {
	if sh, ok := modelInputs[strings.ToLower(s)]; ok {
		return sh, nil
	}
	parts := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == 'x' || r == '×' || r == ',' })
	if len(parts) == 3 {
		var v [3]int
		ok := true
		for i, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			ok = ok && err == nil && n > 0
			v[i] = n
		}
		if ok {
			return models.Shape{C: v[0], H: v[1], W: v[2]}, nil
		}
	}
	names := slices.Sorted(maps.Keys(modelInputs))
	return models.Shape{}, fmt.Errorf("input %q (accepted: %s, or CxHxW such as 3x32x32)", s, strings.Join(names, ", "))
}

func (x *expander) gradients(b *GradientBlock, where string) error {
	if b.Model == "" {
		return fmt.Errorf("%s: model: missing (accepted: %s)", where, strings.Join(models.Names(), ", "))
	}
	input := b.Input
	if input == "" {
		if input = defaultInput[b.Model]; input == "" {
			return fmt.Errorf("%s: input: missing for model %s (accepted: mnist, cifar10, imagenet or CxHxW)", where, b.Model)
		}
	}
	shape, err := parseShape(input)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	classes := b.Classes
	if classes == 0 {
		classes = 10
		if shape == models.ImageNet {
			classes = 1000
		}
	}
	if b.BucketCapMB < 0 || math.IsNaN(b.BucketCapMB) {
		return fmt.Errorf("%s: bucket_cap_mb %v: must be positive (0 means DDP's 25)", where, b.BucketCapMB)
	}
	prof, err := models.Profile(b.Model, shape, classes)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	sizes := prof.BucketBytes(b.BucketCapMB)
	cb := CollectiveBlock{
		Strategies: b.Strategies, NP: b.NP, Collectives: []string{"allreduce"}, Links: b.Links, Options: b.Options,
	}
	for i, s := range sizes {
		cb.Sizes.List = append(cb.Sizes.List, strconv.Itoa(s))
		if i == 0 {
			cb.about = fmt.Sprintf("%s DDP bucket", b.Model)
		}
	}
	if len(sizes) == 0 {
		return fmt.Errorf("%s: model %s has no gradients to replay", where, b.Model)
	}
	return x.collectives(&cb, where)
}

func (x *expander) peers() error {
	for _, name := range x.plan.Peers {
		if !slices.Contains(peers.Names(), name) {
			return fmt.Errorf("plan: peers: unknown peer %q (accepted: %s)", name, strings.Join(peers.Names(), ", "))
		}
	}
	if len(x.plan.Peers) == 0 {
		return nil
	}
	nps := slices.Sorted(maps.Keys(x.allreduce))
	if len(nps) == 0 {
		return errors.New("plan: peers: the plan has no unshaped float32 sum allreduce points for the peers to replay")
	}
	for _, name := range slices.Compact(slices.Clone(x.plan.Peers)) {
		avail := peers.Available(name)
		if avail != nil && x.plan.SkipUnavailable {
			x.note("plan: peers: " + avail.Error())
			continue
		}
		for _, np := range nps {
			sizes := slices.Sorted(slices.Values(x.allreduce[np]))
			job := peers.Job{
				NP: np, Sizes: sizes, Iters: x.plan.Iters, Warmup: *x.plan.Warmup, Check: *x.plan.Check,
				Timeout: x.plan.Timeout, TimeBudget: x.plan.TimeBudget,
			}
			g := &Group{Peer: &PeerJob{Peer: name, Job: job, Avail: avail}}
			if avail != nil {
				g.Skip = avail.Error()
			}
			for _, s := range sizes {
				rec := peers.Skeleton(name, np, s)
				rec.Workload = x.workload[peerSize{np, s}]
				g.Points = append(g.Points, PlannedPoint{
					ID: rec.Point, Record: *rec,
					Desc: fmt.Sprintf("allreduce %s (peer) np=%d %s float32", name, np, results.FormatSize(s)),
				})
			}
			x.exp.Groups = append(x.exp.Groups, g)
		}
	}
	return nil
}

func (x *expander) training(b *TrainingBlock, where string) error {
	cfg := train.Config{
		Model: b.Model, Dataset: b.Dataset, DataDir: b.DataDir, Mode: b.Mode, Epochs: b.Epochs, MaxSteps: b.Steps, TestSamples: b.TestSamples,
		Batch: b.Batch, LR: b.LR, LRSchedule: b.LRSchedule, LRWarmup: b.LRWarmup,
		Momentum: DefaultTrainMomentum, BucketMiB: b.BucketCapMB, Seed: b.Seed,
	}
	if cfg.Mode == "" {
		cfg.Mode = "ddp"
	}
	if cfg.Epochs == 0 {
		cfg.Epochs = 1
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultTrainBatch
	}
	if cfg.LR == 0 {
		cfg.LR = DefaultTrainLR
	}
	if b.Momentum != nil {
		cfg.Momentum = *b.Momentum
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if b.Steps < 0 {
		return fmt.Errorf("%s: steps %d: must not be negative", where, b.Steps)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = data.DefaultDir(cfg.Dataset)
	}
	if abs, err := filepath.Abs(cfg.DataDir); err == nil {
		cfg.DataDir = abs // the workers may start elsewhere
	}
	strategies, why, err := x.strategies(b.Strategies, where)
	if err != nil {
		return err
	}
	if err := checkNP(b.NP, where); err != nil {
		return err
	}
	for _, np := range b.NP {
		if err := cfg.Validate(np); err != nil {
			return fmt.Errorf("%s: np %d: %w", where, np, err)
		}
	}
	links, err := checkLinks(b.Links, where)
	if err != nil {
		return err
	}
	// A dataset that is not here cannot be trained on: like a missing
	// GPU, that is the machine's lack, not a bad plan.
	noData := ""
	if st, err := os.Stat(cfg.DataDir); err != nil || !st.IsDir() {
		noData = fmt.Sprintf("dataset %s not found in %s (run 'make data', or set data_dir)", cfg.Dataset, cfg.DataDir)
	}
	for _, st := range strategies {
		if err := checkOptions(st, b.Options, where); err != nil {
			return err
		}
		skip := cmp.Or(why[st], noData)
		if skip != "" && x.plan.SkipUnavailable {
			x.note(fmt.Sprintf("%s: %s", where, skip))
			continue
		}
		for _, np := range b.NP {
			for _, link := range links {
				c := cfg
				spec := &job.Spec{
					Strategy: st, NP: np, Options: maps.Clone(b.Options), Link: link, Timeout: x.plan.Timeout,
					Iters: 1, Train: &c,
				}
				if len(spec.Options) == 0 {
					spec.Options = nil
				}
				id := trainID(spec)
				if x.seen[id] {
					continue
				}
				x.seen[id] = true
				rec := results.Record{
					Kind: results.KindTrainEpoch, Point: id, Model: c.Model, Dataset: c.Dataset, Mode: c.Mode,
					Strategy: st, NP: np, Link: link, Options: spec.Options, Root: -1, Wrong: -1,
				}
				x.exp.Groups = append(x.exp.Groups, &Group{
					Spec: spec, Skip: skip,
					Points: []PlannedPoint{{ID: id, Desc: "train " + strings.TrimPrefix(id, "train/"), Record: rec}},
				})
			}
		}
	}
	return nil
}

// trainID identifies a training run by everything that changes what it
// measures.
func trainID(s *job.Spec) string {
	c := s.Train
	id := fmt.Sprintf("train/%s/%s/%s/%s/np=%d/epochs=%d", c.Model, c.Dataset, c.Mode, s.Strategy, s.NP, c.Epochs)
	if c.MaxSteps > 0 {
		id += fmt.Sprintf("/steps=%d", c.MaxSteps)
	}
	if c.TestSamples > 0 {
		id += fmt.Sprintf("/test_samples=%d", c.TestSamples)
	}
	id += fmt.Sprintf("/batch=%d/lr=%s/momentum=%s/seed=%d", c.Batch,
		strconv.FormatFloat(c.LR, 'g', -1, 64), strconv.FormatFloat(c.Momentum, 'g', -1, 64), c.Seed)
	if c.LRSchedule != "" && c.LRSchedule != "constant" {
		id += "/lr_schedule=" + c.LRSchedule
	}
	if c.LRWarmup > 0 {
		id += fmt.Sprintf("/lr_warmup=%d", c.LRWarmup)
	}
	if c.BucketMiB > 0 {
		id += "/bucket_mb=" + strconv.FormatFloat(c.BucketMiB, 'g', -1, 64)
	}
	if s.Link != "" {
		id += "/link=" + s.Link
	}
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		id += "/" + k + "=" + s.Options[k]
	}
	return id
}
