package tree

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// Broadcast is a pipelined binomial tree: each rank receives chunk k from its
// parent straight into t and forwards it to its children while receiving
// chunk k+1. ⌈log2 n⌉ levels, so the latency is that many hops plus the
// pipeline; the root sends the buffer once per child.
func (a *algorithms) Broadcast(c *core.Call, t collective.Tensor, root int) error {
	f := &flow{
		node: shapes.Binomial(c.Size(), root, c.Rank()), name: "binomial broadcast",
		dt: t.DType, buf: t.Data, chunk: a.chunkBytes(t.DType), down: true,
	}
	return run(c, func(int) int { return 0 }, f)
}

// Reduce is the broadcast's tree run backwards, pipelined the same way: each
// rank reduces chunk k of its children (in a fixed order) into its own and
// passes it to its parent. Non-root ranks accumulate in a scratch copy,
// leaving t as it was.
func (a *algorithms) Reduce(c *core.Call, t collective.Tensor, root int, op collective.Op) error {
	nd := shapes.Binomial(c.Size(), root, c.Rank())
	acc := t.Data
	if nd.Parent >= 0 && len(nd.Children) > 0 {
		acc = c.Scratch(0, len(t.Data))
		copy(acc, t.Data)
	}
	f := &flow{
		node: nd, name: "binomial reduce",
		dt: t.DType, op: op, buf: acc, chunk: a.chunkBytes(t.DType), up: true,
	}
	return run(c, func(int) int { return 1 }, f)
}

// Gather collects up the binomial tree: every rank receives its children's
// subtrees, which are contiguous in root-relative rank order, beside its own
// block, and sends the lot to its parent in one message; the root rotates
// the relative order into rank order. ⌈log2 n⌉ steps instead of the n−1
// messages into the root of a flat gather.
func (a *algorithms) Gather(c *core.Call, out, in collective.Tensor, root int) error {
	n, r := c.Size(), c.Rank()
	nd := shapes.Binomial(n, root, r)
	v := core.Mod(r-root, n)
	per := len(in.Data)
	if len(nd.Children) == 0 {
		if err := c.Send(nd.Parent, 0, in.Data); err != nil {
			return fmt.Errorf("binomial gather: %w", err)
		}
		return nil
	}
	sub := out.Data // in relative order: blocks v, v+1, … of its subtree
	if nd.Parent >= 0 || root != 0 {
		sub = c.Scratch(0, shapes.BinomialSpan(v, n)*per)
	}
	copy(sub[:per], in.Data)
	fns := make([]func(*core.Call) error, len(nd.Children))
	for i, child := range nd.Children {
		cv := core.Mod(child-root, n)
		lo := (cv - v) * per
		blocks := sub[lo : lo+shapes.BinomialSpan(cv, n)*per]
		fns[i] = func(c *core.Call) error { return c.Recv(child, 0, blocks) }
	}
	if err := c.Parallel(fns...); err != nil {
		return fmt.Errorf("binomial gather: %w", err)
	}
	if nd.Parent >= 0 {
		if err := c.Send(nd.Parent, 0, sub); err != nil {
			return fmt.Errorf("binomial gather: %w", err)
		}
		return nil
	}
	if root != 0 { // relative block j is rank (j+root) mod n's
		copy(out.Data[root*per:], sub[:(n-root)*per])
		copy(out.Data[:root*per], sub[(n-root)*per:])
	}
	return nil
}

// Scatter sends down the binomial tree: the root, holding every block in
// root-relative order, sends each child its subtree's blocks in one message,
// and each rank keeps its own block and passes the rest on the same way.
func (a *algorithms) Scatter(c *core.Call, out, in collective.Tensor, root int) error {
	n, r := c.Size(), c.Rank()
	nd := shapes.Binomial(n, root, r)
	v := core.Mod(r-root, n)
	per := len(out.Data)
	if len(nd.Children) == 0 {
		if err := c.Recv(nd.Parent, 0, out.Data); err != nil {
			return fmt.Errorf("binomial scatter: %w", err)
		}
		return nil
	}
	var sub []byte // in relative order: blocks v, v+1, … of its subtree
	switch {
	case nd.Parent >= 0:
		sub = c.Scratch(0, shapes.BinomialSpan(v, n)*per)
		if err := c.Recv(nd.Parent, 0, sub); err != nil {
			return fmt.Errorf("binomial scatter: %w", err)
		}
	case root == 0:
		sub = in.Data
	default:
		sub = c.Scratch(0, n*per)
		copy(sub, in.Data[root*per:])
		copy(sub[(n-root)*per:], in.Data[:root*per])
	}
	fns := make([]func(*core.Call) error, len(nd.Children))
	for i, child := range nd.Children {
		cv := core.Mod(child-root, n)
		lo := (cv - v) * per
		blocks := sub[lo : lo+shapes.BinomialSpan(cv, n)*per]
		fns[i] = func(c *core.Call) error { return c.Send(child, 0, blocks) }
	}
	if err := c.Parallel(fns...); err != nil {
		return fmt.Errorf("binomial scatter: %w", err)
	}
	copy(out.Data, sub[:per])
	return nil
}
