package ps

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

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

// InitParams implements collective.ParamServer.
func (c *comm) InitParams(ctx context.Context, key string, init []float32, opt collective.SGD) error {
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

// PushGrad implements collective.ParamServer.
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

// PullParams implements collective.ParamServer.
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
