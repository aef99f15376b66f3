package ps

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

// ParamServer is the training mode only a parameter server has: servers
// that hold the parameters and apply the optimizer, workers that push
// gradients and pull parameters. The world communicator that
// collective.New returns for "ps" implements it (groups made by NewGroup
// do not):
//
//	p, ok := comm.(ps.ParamServer)
//
// Keys name parameter tensors (at most 256 bytes); each is sharded over the
// servers like a collective's tensor. Every worker calls InitParams for a
// key once, then, for steps t = 0, 1, 2, …, PushGrad(t) and PullParams(t).
// The optimizer's fixed settings (SGD) come with InitParams, the learning
// rate with every PushGrad, so that a schedule (warm-up, step decay,
// cosine) can change it from one step to the next as a torch scheduler
// changes an optimizer's lr between steps. The option "staleness" (s)
// chooses the consistency:
//
//   - s = 0, synchronous: a server applies step t once every worker's step-t
//     gradient has arrived, as their mean, with the learning rate that came
//     with them; PullParams(t) returns the parameters after step t, the same
//     on every worker. This is what allreduce-averaged data parallelism
//     computes. Every worker's push of a step must carry the same rate: a
//     disagreement fails the job, as inits that disagree do.
//   - s > 0, asynchronous with bounded staleness (stale synchronous
//     parallel): a server applies each worker's gradient as it arrives,
//     divided by the number of workers, with the learning rate that came
//     with it; PullParams(t) waits only until the slowest worker has pushed
//     step t−s, so fast workers run up to s steps ahead on parameters
//     missing up to s steps of others' updates.
//
// The calls are independent of the collectives: they do not take sequence
// numbers and may overlap them, and calls for different keys may overlap
// each other. Each has the communicator's timeout. A failed call fails the
// job on the servers, as a failed collective does.
type ParamServer interface {
	// InitParams registers key on the servers with the optimizer's fixed
	// settings. Rank 0's init values are used; on the other ranks init is
	// overwritten with them when InitParams returns. Every worker must
	// call it with the same length and settings.
	InitParams(ctx context.Context, key string, init []float32, opt SGD) error
	// PushGrad sends this worker's gradient for step (0, 1, 2, … in turn),
	// to be applied with learning rate lr (finite; synchronously, the same
	// on every worker for a step).
	PushGrad(ctx context.Context, key string, grad []float32, step int, lr float32) error
	// PullParams fills dst with the parameters once every worker's
	// gradients through step − staleness are applied; step −1 asks for the
	// initial values.
	PullParams(ctx context.Context, key string, dst []float32, step int) error
}

// SGD is the servers' optimizer: stochastic gradient descent with
// momentum, as torch.optim.SGD (dampening 0, no Nesterov):
// v ← Momentum·v + g; p ← p − lr·v, where lr is the learning rate the
// gradient's PushGrad carried. Its fields are the settings fixed for the
// whole run.
type SGD struct {
	Momentum float32
}

// paramPlan is a key's layout and the header fields its messages share.
func (c *comm) paramPlan(key string, n int, k kind, step int) ([]shard, header, error) {
	w := c.w
	if key == "" || len(key) > maxName {
		return nil, header{}, collective.Invalidf("key %q: want 1 to %d bytes", key, maxName)
	}
	if n == 0 {
		return nil, header{}, collective.Invalidf("key %q: no parameters", key)
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	shards := layout(n, 4, w.k, int(h.Sum32()%uint32(w.k)), w.o.partition)
	return shards, header{
		kind: k, dtype: collective.Float32, rank: uint32(w.cfg.Rank), contrib: uint32(w.cfg.Size),
		chunk: uint32(w.chunk(collective.Float32)), aux: uint32(w.o.staleness), seq: int64(step), name: key,
	}, nil
}

func finite(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

func floats(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

// InitParams implements ParamServer.
func (c *comm) InitParams(ctx context.Context, key string, init []float32, opt SGD) error {
	what := fmt.Sprintf("ps: init %q", key)
	if !finite(opt.Momentum) {
		return fmt.Errorf("%s: %w", what, collective.Invalidf("momentum %v must be finite", opt.Momentum))
	}
	shards, h, err := c.paramPlan(key, len(init), kindInit, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	h.momentum = opt.Momentum
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout())
	defer cancel()
	var jobs []job
	data := []region{{0, floats(init)}}
	for _, sh := range shards {
		conn, hh := c.w.conns[sh.server], h
		hh.shard = uint64(sh.len())
		var pieces []piece // the other ranks' init carries no values
		if c.w.cfg.Rank == 0 {
			pieces = cut(data, sh, int(h.chunk))
		}
		jobs = append(jobs, job{sh.server, func(ctx context.Context) error { return conn.push(ctx, hh, pieces) }})
	}
	if err := c.w.exchange(ctx, what, jobs); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if c.w.cfg.Rank != 0 {
		return c.PullParams(ctx, key, init, -1)
	}
	return nil
}

// PushGrad implements ParamServer.
func (c *comm) PushGrad(ctx context.Context, key string, grad []float32, step int, lr float32) error {
	what := fmt.Sprintf("ps: push gradient %q step %d", key, step)
	if step < 0 {
		return fmt.Errorf("%s: %w", what, collective.Invalidf("steps count from 0"))
	}
	if !finite(lr) {
		return fmt.Errorf("%s: %w", what, collective.Invalidf("learning rate %v must be finite", lr))
	}
	shards, h, err := c.paramPlan(key, len(grad), kindGrad, step)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	h.lr = lr
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout())
	defer cancel()
	var jobs []job
	data := []region{{0, floats(grad)}}
	for _, sh := range shards {
		conn, hh := c.w.conns[sh.server], h
		hh.shard = uint64(sh.len())
		pieces := cut(data, sh, int(h.chunk))
		jobs = append(jobs, job{sh.server, func(ctx context.Context) error { return conn.push(ctx, hh, pieces) }})
	}
	if err := c.w.exchange(ctx, what, jobs); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// PullParams implements ParamServer.
func (c *comm) PullParams(ctx context.Context, key string, dst []float32, step int) error {
	what := fmt.Sprintf("ps: pull parameters %q step %d", key, step)
	if step < -1 {
		return fmt.Errorf("%s: %w", what, collective.Invalidf("step %d (accepted: -1 for the initial values, or a step)", step))
	}
	shards, h, err := c.paramPlan(key, len(dst), kindParams, step)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout())
	defer cancel()
	var jobs []job
	out := floats(dst)
	for _, sh := range shards {
		conn, hh := c.w.conns[sh.server], h
		hh.shard, hh.offset, hh.length = uint64(sh.len()), 0, uint64(sh.len())
		part := out[sh.lo:sh.hi]
		jobs = append(jobs, job{sh.server, func(ctx context.Context) error { return conn.pull(ctx, hh, part) }})
	}
	if err := c.w.exchange(ctx, what, jobs); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
