package bridge

import (
	"context"

	"github.com/distbench/distbench/collective"
)

// The operations, each issued at once and completed in issue order (see
// Issue). Tensors are views of the caller's memory, which must stay valid
// and untouched until the operation is done.

func newOp(name string, t collective.Tensor) *Op {
	return &Op{Collective: name, Bytes: int64(t.Bytes()), Count: int64(t.Count()), DType: t.DType}
}

// AllReduce reduces t in place across the communicator.
func (c *Comm) AllReduce(t collective.Tensor, op collective.Op) *Op {
	o := newOp("allreduce", t)
	o.Reduce = op
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IAllReduce(ctx, t, op) })
}

// Reduce reduces t into root's t.
func (c *Comm) Reduce(t collective.Tensor, root int, op collective.Op) *Op {
	o := newOp("reduce", t)
	o.Reduce, o.Root = op, root
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IReduce(ctx, t, root, op) })
}

// Broadcast copies root's t into every rank's t.
func (c *Comm) Broadcast(t collective.Tensor, root int) *Op {
	o := newOp("broadcast", t)
	o.Root = root
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IBroadcast(ctx, t, root) })
}

// AllGather concatenates every rank's in into out.
func (c *Comm) AllGather(out, in collective.Tensor) *Op {
	return c.Issue(newOp("allgather", out), func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IAllGather(ctx, out, in) })
}

// ReduceScatter reduces in across ranks, leaving this rank's block in out.
func (c *Comm) ReduceScatter(out, in collective.Tensor, op collective.Op) *Op {
	o := newOp("reducescatter", in)
	o.Reduce = op
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work {
		return cc.IReduceScatter(ctx, out, in, op)
	})
}

// AllToAll sends block j of in to rank j.
func (c *Comm) AllToAll(out, in collective.Tensor) *Op {
	return c.Issue(newOp("alltoall", in), func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IAllToAll(ctx, out, in) })
}

// Gather concatenates every rank's in into root's out.
func (c *Comm) Gather(out, in collective.Tensor, root int) *Op {
	o := newOp("gather", out)
	o.Root = root
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IGather(ctx, out, in, root) })
}

// Scatter sends block i of root's in to rank i's out.
func (c *Comm) Scatter(out, in collective.Tensor, root int) *Op {
	o := newOp("scatter", in)
	o.Root = root
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IScatter(ctx, out, in, root) })
}

// Barrier completes once every rank has entered it.
func (c *Comm) Barrier() *Op {
	return c.Issue(&Op{Collective: "barrier"}, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IBarrier(ctx) })
}

// Send sends t to rank peer, matched by its Recv with the same tag.
func (c *Comm) Send(t collective.Tensor, peer, tag int) *Op {
	o := newOp("send", t)
	o.Root = peer
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.ISend(ctx, t, peer, tag) })
}

// Recv receives into t from rank peer.
func (c *Comm) Recv(t collective.Tensor, peer, tag int) *Op {
	o := newOp("recv", t)
	o.Root = peer
	return c.Issue(o, func(ctx context.Context, cc collective.Comm) collective.Work { return cc.IRecv(ctx, t, peer, tag) })
}
