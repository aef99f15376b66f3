package train

import (
	"github.com/distbench/distbench/workloads/data"
)

// feed yields each step's batch. In every mode but dp each rank loads its
// own shard of the global batch (its DistributedSampler's next minibatch).
// In dp the master (rank 0) loads the global batch, as DataParallel's one
// process does, made of exactly the shards the ranks would have loaded in
// ddp, in rank order, so that the scatter hands rank r the batch ddp's
// rank r trains on and the two modes learn the same; the other ranks load
// nothing and only count the steps.
type feed struct {
	loaders []*data.Loader // by rank whose shard it loads
	count   bool           // dp's non-master: batches carry only a Number
}

func newFeed(cfg Config, trainSet *data.Dataset, n, rank int) (*feed, error) {
	f := &feed{}
	ranks := []int{rank}
	if cfg.Mode == "dp" {
		if rank == 0 {
			ranks = make([]int, n)
			for r := range ranks {
				ranks[r] = r
			}
		} else {
			f.count = true
		}
	}
	for _, r := range ranks {
		sampler, err := data.NewDistributedSampler(trainSet.N, n, r, cfg.Seed)
		if err != nil {
			return nil, err
		}
		l := &data.Loader{Data: trainSet, BatchSize: cfg.Batch / n, Sampler: sampler, Seed: cfg.Seed + uint64(r), DropLast: true}
		if cfg.Augment {
			l.Augment = data.Augment{CropPad: 4, HFlip: true}
		}
		if err := l.Validate(); err != nil {
			return nil, err
		}
		f.loaders = append(f.loaders, l)
	}
	return f, nil
}

// feedEpoch is one epoch of a feed.
type feedEpoch struct {
	f      *feed
	eps    []*data.Epoch
	next   int
	global data.Batch
}

func (f *feed) epoch(e int) (*feedEpoch, error) {
	fe := &feedEpoch{f: f}
	for _, l := range f.loaders {
		ep, err := l.Epoch(e)
		if err != nil {
			return nil, err
		}
		fe.eps = append(fe.eps, ep)
	}
	return fe, nil
}

// batches is the number of steps in the epoch: every rank's sampler yields
// as many samples (DistributedSampler pads), so every shard has as many
// batches.
func (fe *feedEpoch) batches() int { return fe.eps[0].NumBatches() }

// nextBatch returns the next step's batch, nil at the end of the epoch.
// The batch is reused by the next call.
func (fe *feedEpoch) nextBatch() *data.Batch {
	if fe.next >= fe.batches() {
		return nil
	}
	k := fe.next
	fe.next++
	switch {
	case fe.f.count:
		fe.global = data.Batch{Number: k}
		return &fe.global
	case len(fe.eps) == 1:
		return fe.eps[0].Next()
	}
	g := &fe.global
	g.X, g.Labels, g.Indices = g.X[:0], g.Labels[:0], g.Indices[:0]
	g.Number = k
	for _, ep := range fe.eps {
		b := ep.Next()
		g.X = append(g.X, b.X...)
		g.Labels = append(g.Labels, b.Labels...)
		g.Indices = append(g.Indices, b.Indices...)
		g.Shape = b.Shape
	}
	g.Shape[0] = len(g.Labels)
	return g
}
