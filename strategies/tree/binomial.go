package tree

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// binomial is rank r's place in the binomial tree over n ranks rooted at
// root. In root-relative ranks v = r−root (mod n), v's parent is v with its
// lowest set bit cleared and its children are v+2^j for every 2^j below that
// bit (below n, for the root) with v+2^j < n, largest subtree first:
//
//	0 ── 4 ── 6 ── 7
//	│    └─── 5
//	├─── 2 ── 3
//	└─── 1
//
// so the tree is ⌈log2 n⌉ levels deep and v's subtree is the contiguous
// relative ranks [v, v+span(v)).
func binomial(n, root, r int) node {
	v := core.Mod(r-root, n)
	nd := node{parent: -1}
	bit := lowBit(v, n)
	if v != 0 {
		nd.parent = (v - bit + root) % n
	}
	for m := bit >> 1; m > 0; m >>= 1 {
		if v+m < n {
			nd.children = append(nd.children, (v+m+root)%n)
		}
	}
	return nd
}

// lowBit is v's lowest set bit, or for the root (v = 0) the smallest power of
// two not below n.
func lowBit(v, n int) int {
	if v != 0 {
		return v & -v
	}
	b := 1
	for b < n {
		b <<= 1
	}
	return b
}

// span is the number of ranks in relative rank v's subtree.
func span(v, n int) int { return min(lowBit(v, n), n-v) }

// Broadcast is a pipelined binomial tree: each rank receives chunk k from its
// parent straight into t and forwards it to its children while receiving
// chunk k+1. ⌈log2 n⌉ levels, so the latency is that many hops plus the
// pipeline; the root sends the buffer once per child.
func (a *algorithms) Broadcast(c *core.Call, t collective.Tensor, root int) error {
	f := &flow{
		node: binomial(c.Size(), root, c.Rank()), name: "binomial broadcast",
		dt: t.DType, buf: t.Data, chunk: a.chunkBytes(t.DType), down: true,
	}
	return run(c, func(int) int { return 0 }, f)
}

// Reduce is the broadcast's tree run backwards, pipelined the same way: each
// rank reduces chunk k of its children (in a fixed order) into its own and
// passes it to its parent. Non-root ranks accumulate in a scratch copy,
// leaving t as it was.
func (a *algorithms) Reduce(c *core.Call, t collective.Tensor, root int, op collective.Op) error {
	nd := binomial(c.Size(), root, c.Rank())
	acc := t.Data
	if nd.parent >= 0 && len(nd.children) > 0 {
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
	nd := binomial(n, root, r)
	v := core.Mod(r-root, n)
	per := len(in.Data)
	if len(nd.children) == 0 {
		if err := c.Send(nd.parent, 0, in.Data); err != nil {
			return fmt.Errorf("binomial gather: %w", err)
		}
		return nil
	}
	sub := out.Data // in relative order: blocks v, v+1, … of its subtree
	if nd.parent >= 0 || root != 0 {
		sub = c.Scratch(0, span(v, n)*per)
	}
	copy(sub[:per], in.Data)
	fns := make([]func(*core.Call) error, len(nd.children))
	for i, child := range nd.children {
		cv := core.Mod(child-root, n)
		lo := (cv - v) * per
		blocks := sub[lo : lo+span(cv, n)*per]
		fns[i] = func(c *core.Call) error { return c.Recv(child, 0, blocks) }
	}
	if err := c.Parallel(fns...); err != nil {
		return fmt.Errorf("binomial gather: %w", err)
	}
	if nd.parent >= 0 {
		if err := c.Send(nd.parent, 0, sub); err != nil {
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
	nd := binomial(n, root, r)
	v := core.Mod(r-root, n)
	per := len(out.Data)
	if len(nd.children) == 0 {
		if err := c.Recv(nd.parent, 0, out.Data); err != nil {
			return fmt.Errorf("binomial scatter: %w", err)
		}
		return nil
	}
	var sub []byte // in relative order: blocks v, v+1, … of its subtree
	switch {
	case nd.parent >= 0:
		sub = c.Scratch(0, span(v, n)*per)
		if err := c.Recv(nd.parent, 0, sub); err != nil {
			return fmt.Errorf("binomial scatter: %w", err)
		}
	case root == 0:
		sub = in.Data
	default:
		sub = c.Scratch(0, n*per)
		copy(sub, in.Data[root*per:])
		copy(sub[(n-root)*per:], in.Data[:root*per])
	}
	fns := make([]func(*core.Call) error, len(nd.children))
	for i, child := range nd.children {
		cv := core.Mod(child-root, n)
		lo := (cv - v) * per
		blocks := sub[lo : lo+span(cv, n)*per]
		fns[i] = func(c *core.Call) error { return c.Send(child, 0, blocks) }
	}
	if err := c.Parallel(fns...); err != nil {
		return fmt.Errorf("binomial scatter: %w", err)
	}
	copy(out.Data, sub[:per])
	return nil
}
