package train

import (
	"context"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/nn"
)

// stepStats is one step's timing, in milliseconds.
type stepStats struct {
	loss        float32
	start       time.Time
	updateStart time.Time
	computeMs   float64            // forward + backward + update, without waiting for comm
	commMs      float64            // time the strategy spent on this step's allreduces
	exposedMs   float64            // time the step waited for communication after backward
	transferMs  map[string]float64 // by transfer, where a mode's step is a fixed sequence of them (dp)
}

// syncer runs forward and backward on a batch and averages the gradients
// across ranks, in one mode's way. lr is the step's learning rate, for the
// modes whose servers apply the update; the others leave it to the
// worker's optimizer.
type syncer interface {
	step(ctx context.Context, net *nn.Net, b *data.Batch, lr float64) (*stepStats, error)
	// updatesLocally reports whether the worker applies the optimizer.
	updatesLocally() bool
}

func newSyncer(cfg Config, comm collective.Comm, net *nn.Net, trainSet *data.Dataset) (syncer, error) {
	switch cfg.Mode {
	case "tutorial":
		return &tutorial{comm: comm}, nil
	case "dp":
		return newDataParallel(cfg, comm, net, trainSet), nil
	case "ps-sync", "ps-async":
		return newParamServer(cfg, comm)
	}
	capMiB := cfg.BucketMiB
	if capMiB == 0 {
		capMiB = 25
	}
	// DDP caps its first bucket at 1 MiB so that communication starts early.
	firstCap := min(1<<20, int(capMiB*(1<<20)))
	return &ddp{comm: comm, buckets: nn.AssignBuckets(net.ReadyOrder(), firstCap, int(capMiB*(1<<20)))}, nil
}

func (*tutorial) updatesLocally() bool { return true }
func (*ddp) updatesLocally() bool      { return true }

// tutorial allreduces each parameter's gradient after backward, in order,
// then divides by the world size: the tutorial's average_gradients.
type tutorial struct{ comm collective.Comm }

func (t *tutorial) step(ctx context.Context, net *nn.Net, b *data.Batch, _ float64) (*stepStats, error) {
	st := &stepStats{start: time.Now()}
	net.ZeroGrad()
	st.loss, _ = net.ForwardBackward(&nn.Tensor{Shape: b.Shape[:], Data: b.X}, b.Labels)
	st.computeMs = msSince(st.start)
	commStart := time.Now()
	for _, p := range net.Param {
		if err := t.comm.AllReduce(ctx, collective.FromFloat32(p.Grad), collective.Sum); err != nil {
			return nil, err
		}
		inv := 1 / float32(t.comm.Size())
		for i := range p.Grad {
			p.Grad[i] *= inv
		}
	}
	st.commMs = msSince(commStart)
	st.exposedMs = st.commMs
	st.updateStart = time.Now()
	return st, nil
}

// ddp launches each bucket's allreduce (Avg) from the gradient-ready hook as
// soon as the bucket's last gradient is final.
type ddp struct {
	comm    collective.Comm
	buckets []nn.Bucket
	owner   map[*nn.Param]int // bucket of each parameter
	pending []int             // gradients each bucket still waits for
}

func (d *ddp) step(ctx context.Context, net *nn.Net, b *data.Batch, _ float64) (*stepStats, error) {
	if d.owner == nil {
		d.owner = map[*nn.Param]int{}
		for i, bk := range d.buckets {
			for _, p := range bk.Params {
				d.owner[p] = i
			}
		}
		d.pending = make([]int, len(d.buckets))
	}
	for i, bk := range d.buckets {
		d.pending[i] = len(bk.Params)
	}
	st := &stepStats{start: time.Now()}
	launched := make([]time.Time, len(d.buckets))
	done := make([]time.Time, len(d.buckets))
	works := make([]collective.Work, len(d.buckets))
	var wg sync.WaitGroup
	launch := func(i int) {
		bk := d.buckets[i]
		var t collective.Tensor
		if bk.Contiguous {
			t = collective.FromFloat32(net.Grad[bk.Start:bk.End])
		} else {
			// A bucket whose gradients are not adjacent in the flat
			// buffer would need a copy in and out; AssignBuckets makes
			// contiguous ones for every built-in model.
			panic("train: non-contiguous gradient bucket")
		}
		launched[i] = time.Now()
		works[i] = d.comm.IAllReduce(ctx, t, collective.Avg)
		wg.Go(func() {
			<-works[i].Done()
			done[i] = time.Now()
		})
	}
	net.ZeroGrad()
	net.OnGradReady(func(p *nn.Param) {
		i := d.owner[p]
		d.pending[i]--
		if d.pending[i] == 0 {
			launch(i)
		}
	})
	st.loss, _ = net.ForwardBackward(&nn.Tensor{Shape: b.Shape[:], Data: b.X}, b.Labels)
	net.OnGradReady(nil)
	backwardEnd := time.Now()
	st.computeMs = float64(backwardEnd.Sub(st.start).Nanoseconds()) / 1e6
	for i := range d.buckets { // a bucket whose hook never fired (unused params)
		if works[i] == nil {
			launch(i)
		}
	}
	var err error
	for _, w := range works {
		if e := w.Wait(ctx); e != nil && err == nil {
			err = e
		}
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	// The strategy runs allreduces one at a time, in launch order: bucket i
	// occupies it from max(its launch, bucket i−1's end) to its own end.
	var busyUntil time.Time
	for i := range d.buckets {
		s := launched[i]
		if busyUntil.After(s) {
			s = busyUntil
		}
		st.commMs += float64(done[i].Sub(s).Nanoseconds()) / 1e6
		busyUntil = done[i]
	}
	if busyUntil.After(backwardEnd) {
		st.exposedMs = float64(busyUntil.Sub(backwardEnd).Nanoseconds()) / 1e6
	}
	st.updateStart = time.Now()
	return st, nil
}
