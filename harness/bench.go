package harness

import (
	"context"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/exact"
)

// instance is one point's buffers on one rank.
type instance struct {
	comm    collective.Comm
	n, r    int
	dt      collective.DType
	op      collective.Op
	root    int
	count   int // elements of the larger buffer, the "size" nccl-tests prints
	inplace bool
	in, out collective.Tensor
}

// benchmark describes how to measure one collective; what it takes (an op,
// a root) and how its size splits are its job.Traits. One for every name in
// job.Collectives.
type benchmark struct {
	// alloc sets in and out for the in-place or out-of-place form.
	alloc func(b *instance)
	// run performs the operation once.
	run func(ctx context.Context, b *instance) error
	// fill writes check inputs; wrong counts the elements of the result
	// that differ from the exact answer (on the ranks that hold one).
	fill  func(b *instance)
	wrong func(b *instance) int64
}

var benchmarks = map[string]benchmark{
	"allreduce": {
		alloc: allocWhole,
		// The API's allreduce works in place, as torch's does; the
		// out-of-place form is what its users write: out.copy_(in), then
		// all_reduce(out). The copy is part of the measured time.
		run: func(ctx context.Context, b *instance) error {
			if !b.inplace {
				if err := b.out.CopyFrom(b.in); err != nil {
					return err
				}
			}
			return b.comm.AllReduce(ctx, b.out, b.op)
		},
		fill:  func(b *instance) { exact.Fill(b.in, b.op, b.n, b.r, 0) },
		wrong: func(b *instance) int64 { return exact.CountWrong(b.out, b.op, b.n, 0) },
	},
	"reduce": {
		alloc: allocWhole,
		run: func(ctx context.Context, b *instance) error {
			if !b.inplace {
				if err := b.out.CopyFrom(b.in); err != nil {
					return err
				}
			}
			return b.comm.Reduce(ctx, b.out, b.root, b.op)
		},
		fill: func(b *instance) { exact.Fill(b.in, b.op, b.n, b.r, 0) },
		wrong: func(b *instance) int64 {
			if b.r != b.root {
				return 0
			}
			return exact.CountWrong(b.out, b.op, b.n, 0)
		},
	},
	"broadcast": {
		alloc: allocWhole,
		run: func(ctx context.Context, b *instance) error {
			if !b.inplace && b.r == b.root {
				if err := b.out.CopyFrom(b.in); err != nil {
					return err
				}
			}
			return b.comm.Broadcast(ctx, b.out, b.root)
		},
		fill: func(b *instance) {
			if b.r == b.root {
				exact.FillPattern(b.in, b.root, 0)
			}
		},
		wrong: func(b *instance) int64 { return exact.CountPattern(b.out, b.root, 0) },
	},
	"allgather": {
		alloc: allocGathered,
		run:   func(ctx context.Context, b *instance) error { return b.comm.AllGather(ctx, b.out, b.in) },
		fill:  func(b *instance) { exact.FillPattern(b.in, b.r, 0) },
		wrong: func(b *instance) int64 {
			return wrongGathered(b)
		},
	},
	"reducescatter": {
		alloc: allocScattered,
		run:   func(ctx context.Context, b *instance) error { return b.comm.ReduceScatter(ctx, b.out, b.in, b.op) },
		fill:  func(b *instance) { exact.Fill(b.in, b.op, b.n, b.r, 0) },
		wrong: func(b *instance) int64 {
			return exact.CountWrong(b.out, b.op, b.n, b.r*(b.count/b.n))
		},
	},
	"gather": {
		alloc: allocGathered,
		run:   func(ctx context.Context, b *instance) error { return b.comm.Gather(ctx, b.out, b.in, b.root) },
		fill:  func(b *instance) { exact.FillPattern(b.in, b.r, 0) },
		wrong: func(b *instance) int64 {
			if b.r != b.root {
				return 0
			}
			return wrongGathered(b)
		},
	},
	"scatter": {
		alloc: allocScattered,
		run:   func(ctx context.Context, b *instance) error { return b.comm.Scatter(ctx, b.out, b.in, b.root) },
		fill: func(b *instance) {
			if b.r == b.root {
				exact.FillPattern(b.in, b.root, 0)
			}
		},
		wrong: func(b *instance) int64 { return exact.CountPattern(b.out, b.root, b.r*(b.count/b.n)) },
	},
	"alltoall": {
		alloc: func(b *instance) {
			b.in = collective.NewTensor(b.dt, b.count)
			b.out = b.in
			if !b.inplace {
				b.out = collective.NewTensor(b.dt, b.count)
			}
		},
		run: func(ctx context.Context, b *instance) error { return b.comm.AllToAll(ctx, b.out, b.in) },
		fill: func(b *instance) {
			per := b.count / b.n
			for j := range b.n {
				exact.FillPattern(b.in.Slice(j*per, (j+1)*per), b.r*b.n+j, 0)
			}
		},
		wrong: func(b *instance) int64 {
			per, w := b.count/b.n, int64(0)
			for src := range b.n {
				w += exact.CountPattern(b.out.Slice(src*per, (src+1)*per), src*b.n+b.r, 0)
			}
			return w
		},
	},
	// sendrecv is nccl-tests' ring exchange: every rank sends to its right
	// and receives from its left at once.
	"sendrecv": {
		alloc: func(b *instance) {
			b.in = collective.NewTensor(b.dt, b.count)
			b.out = collective.NewTensor(b.dt, b.count)
		},
		run: func(ctx context.Context, b *instance) error {
			if b.n == 1 {
				return b.out.CopyFrom(b.in)
			}
			right, left := (b.r+1)%b.n, (b.r-1+b.n)%b.n
			s := b.comm.ISend(ctx, b.in, right, 0)
			r := b.comm.IRecv(ctx, b.out, left, 0)
			if err := s.Wait(ctx); err != nil {
				return err
			}
			return r.Wait(ctx)
		},
		fill: func(b *instance) { exact.FillPattern(b.in, b.r, 0) },
		wrong: func(b *instance) int64 {
			return exact.CountPattern(b.out, (b.r-1+b.n)%b.n, 0)
		},
	},
	"barrier": {
		alloc: func(b *instance) {},
		run:   func(ctx context.Context, b *instance) error { return b.comm.Barrier(ctx) },
		fill:  func(b *instance) {},
		wrong: func(b *instance) int64 { return 0 },
	},
}

// allocWhole gives in and out the whole count; in-place they are one buffer.
func allocWhole(b *instance) {
	b.out = collective.NewTensor(b.dt, b.count)
	b.in = b.out
	if !b.inplace {
		b.in = collective.NewTensor(b.dt, b.count)
	}
}

// allocGathered makes out the whole count and in one rank's block of it
// (allgather, gather); in-place, in is this rank's block of out.
func allocGathered(b *instance) {
	per := b.count / b.n
	b.out = collective.NewTensor(b.dt, b.count)
	if b.inplace {
		b.in = b.out.Slice(b.r*per, (b.r+1)*per)
	} else {
		b.in = collective.NewTensor(b.dt, per)
	}
}

// allocScattered is allocGathered the other way round (reduce-scatter,
// scatter): in is the whole count, out one block.
func allocScattered(b *instance) {
	per := b.count / b.n
	b.in = collective.NewTensor(b.dt, b.count)
	if b.inplace {
		b.out = b.in.Slice(b.r*per, (b.r+1)*per)
	} else {
		b.out = collective.NewTensor(b.dt, per)
	}
}

// wrongGathered counts wrong elements of out, whose block src must hold
// rank src's pattern.
func wrongGathered(b *instance) int64 {
	per, w := b.count/b.n, int64(0)
	for src := range b.n {
		w += exact.CountPattern(b.out.Slice(src*per, (src+1)*per), src, 0)
	}
	return w
}
