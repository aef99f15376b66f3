package train

import (
	"context"
	"fmt"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/nn"
)

// The transfers of a dp step, in the order they run, as TransferMs names
// them.
var dpTransfers = []string{"broadcast", "scatter", "gather", "scatter_grad", "reduce"}

// dataParallel trains as torch.nn.DataParallel does, one rank standing for
// each device and rank 0 for the master device, every transfer through the
// collective API:
//
//  1. broadcast: the master's parameters, then its buffers (BatchNorm's
//     running statistics) in one coalesced message, to every replica
//     (replicate);
//  2. scatter: the master's global batch, one shard per rank;
//  3. each rank runs forward on its shard;
//  4. gather: the outputs, to the master, which computes the loss of the
//     whole batch and its gradient with respect to the outputs;
//  5. scatter_grad: each rank's rows of that gradient;
//  6. each rank runs backward from them;
//  7. reduce: the gradients summed on the master, which alone steps the
//     optimizer.
//
// The loss is the mean over the global batch, so the summed gradient is
// the global batch's gradient, the one ddp's averaged allreduce gives: the
// two modes learn the same, up to float rounding. Nothing overlaps; every
// transfer is exposed, and the other ranks wait while the master computes
// the loss and steps.
type dataParallel struct {
	comm    collective.Comm
	master  bool
	buffers []*nn.Buffer
	bufFlat []float32 // the buffers, coalesced for one broadcast
	shard   []float32 // this rank's inputs
	outs    []float32 // on the master: every rank's outputs, in rank order
	dOut    []float32 // this rank's rows of the loss's gradient
	shape   [4]int    // a shard's: the global batch / n, C, H, W
}

func newDataParallel(cfg Config, comm collective.Comm, net *nn.Net, set *data.Dataset) *dataParallel {
	d := &dataParallel{comm: comm, master: comm.Rank() == 0, buffers: net.Buffers(),
		shape: [4]int{cfg.Batch / comm.Size(), set.C, set.H, set.W}}
	d.shard = make([]float32, d.shape[0]*d.shape[1]*d.shape[2]*d.shape[3])
	n := 0
	for _, b := range d.buffers {
		n += len(b.Data)
	}
	d.bufFlat = make([]float32, n)
	return d
}

// updatesLocally: only the master steps the optimizer; the other ranks
// get its parameters at the next step's broadcast.
func (d *dataParallel) updatesLocally() bool { return d.master }

func (d *dataParallel) step(ctx context.Context, net *nn.Net, b *data.Batch, _ float64) (*stepStats, error) {
	st := &stepStats{start: time.Now(), transferMs: make(map[string]float64, len(dpTransfers))}
	var computeMs float64
	transfer := func(name string, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("dp %s: %w", name, err)
		}
		ms := msSince(t0)
		st.transferMs[name] += ms
		st.commMs += ms
		return nil
	}
	compute := func(f func()) {
		t0 := time.Now()
		f()
		computeMs += msSince(t0)
	}
	n := d.comm.Size()

	if err := transfer("broadcast", func() error { return d.replicate(ctx, net) }); err != nil {
		return nil, err
	}
	shape := d.shape
	var in collective.Tensor
	if d.master {
		if b.Shape[0] != n*shape[0] || [3]int(b.Shape[1:]) != [3]int(shape[1:]) || len(b.X) != n*len(d.shard) {
			return nil, fmt.Errorf("dp: a global batch of shape %v is not %d shards of %v", b.Shape, n, shape)
		}
		in = collective.FromFloat32(b.X)
	}
	if err := transfer("scatter", func() error {
		return d.comm.Scatter(ctx, collective.FromFloat32(d.shard), in, 0)
	}); err != nil {
		return nil, err
	}
	var out *nn.Tensor
	compute(func() { out = net.Forward(&nn.Tensor{Shape: shape[:], Data: d.shard}) })
	rows, k := out.Shape[0], out.Shape[len(out.Shape)-1]
	var all collective.Tensor
	if d.master {
		if len(d.outs) != n*len(out.Data) {
			d.outs = make([]float32, n*len(out.Data))
		}
		all = collective.FromFloat32(d.outs)
	}
	if err := transfer("gather", func() error {
		return d.comm.Gather(ctx, all, collective.FromFloat32(out.Data), 0)
	}); err != nil {
		return nil, err
	}
	var grads collective.Tensor
	if d.master {
		compute(func() {
			st.loss = net.Loss.Forward(&nn.Tensor{Shape: []int{n * rows, k}, Data: d.outs}, b.Labels)
			grads = collective.FromFloat32(net.Loss.Backward().Data)
		})
	}
	if len(d.dOut) != rows*k {
		d.dOut = make([]float32, rows*k)
	}
	if err := transfer("scatter_grad", func() error {
		return d.comm.Scatter(ctx, collective.FromFloat32(d.dOut), grads, 0)
	}); err != nil {
		return nil, err
	}
	compute(func() {
		net.ZeroGrad()
		net.BackwardFrom(&nn.Tensor{Shape: []int{rows, k}, Data: d.dOut})
	})
	if err := transfer("reduce", func() error {
		return d.comm.Reduce(ctx, collective.FromFloat32(net.Grad), 0, collective.Sum)
	}); err != nil {
		return nil, err
	}
	st.computeMs = computeMs
	if d.master {
		st.exposedMs = st.commMs
	} else {
		// A replica's time in the step that was not its own compute: its
		// transfers and the master's loss between them. (The master's
		// update shows in the next step's broadcast.)
		st.exposedMs = msSince(st.start) - computeMs
	}
	st.updateStart = time.Now()
	return st, nil
}

// replicate broadcasts the master's parameters, then its buffers coalesced
// into one message (as DataParallel's broadcast_coalesced), to every rank.
func (d *dataParallel) replicate(ctx context.Context, net *nn.Net) error {
	if err := d.comm.Broadcast(ctx, collective.FromFloat32(net.Data), 0); err != nil {
		return err
	}
	if len(d.bufFlat) == 0 {
		return nil
	}
	if d.master {
		off := 0
		for _, b := range d.buffers {
			off += copy(d.bufFlat[off:], b.Data)
		}
	}
	if err := d.comm.Broadcast(ctx, collective.FromFloat32(d.bufFlat), 0); err != nil {
		return err
	}
	if !d.master {
		off := 0
		for _, b := range d.buffers {
			off += copy(b.Data, d.bufFlat[off:])
		}
	}
	return nil
}
