package tree

import (
	"math/bits"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// btree is rank r's place in NCCL's binary tree over n ranks (ncclGetBtree
// in NCCL's src/graph/trees.cc). Rank 0 is the root, with the single child
// 2^k, the largest power of two below n; below it a rank whose lowest set
// bit is b has the children r−b/2 and r+b/2 (or the largest r+b/2^j that
// exists), so odd ranks are leaves and even ranks interior:
//
//	0 ── 8
//	     ├── 4
//	     │   ├── 2 ── 1, 3
//	     │   └── 6 ── 5, 7
//	     └── 12
//	         └── 10 ── 9, 11        (n = 13: 12's second child would be 14)
func btree(n, r int) node {
	if r == 0 {
		bit := 1
		for bit < n {
			bit <<= 1
		}
		nd := node{parent: -1}
		if n > 1 {
			nd.children = []int{bit >> 1}
		}
		return nd
	}
	bit := r & -r
	parent := (r ^ bit) | bit<<1 // r is its parent's first child …
	if parent >= n {
		parent = r ^ bit // … unless that parent does not exist: then its second
	}
	nd := node{parent: parent}
	if low := bit >> 1; low > 0 {
		nd.children = append(nd.children, r-low)
		for low > 0 && r+low >= n {
			low >>= 1
		}
		if low > 0 {
			nd.children = append(nd.children, r+low)
		}
	}
	return nd
}

// dtree is rank r's place in the two trees of NCCL's double binary tree
// (ncclGetDtree). Tree 0 is btree; tree 1 is btree mirrored (rank r plays
// n−1−r) when n is even, or shifted by one (rank r plays r−1) when n is
// odd. Since btree's leaves are its odd ranks, mirroring makes every rank a
// leaf in one of the trees and interior in at most one; the shift does the
// same for every rank except 0, which is the root of tree 0 (with a single
// child) and may be interior in tree 1. Each rank thus sends and receives
// about the same amount in the two trees together.
func dtree(n, r int) [2]node {
	t1, mapRank := btree(n, (r-1+n)%n), func(x int) int { return (x + 1) % n }
	if n%2 == 0 {
		t1, mapRank = btree(n, n-1-r), func(x int) int { return n - 1 - x }
	}
	if t1.parent >= 0 {
		t1.parent = mapRank(t1.parent)
	}
	children := make([]int, len(t1.children))
	for i, c := range t1.children {
		children[i] = mapRank(c)
	}
	t1.children = children
	return [2]node{btree(n, r), t1}
}

// doubleTree is NCCL's double binary tree allreduce: the first half of the
// buffer is reduced up tree 0 and broadcast down it, the second half up and
// down tree 1, both at once and each chunked and pipelined, on channels 0 and
// 1 (a pair of ranks may be linked in both trees). The roots compute the
// result and everyone receives it from them, so every rank ends with the
// same bits.
func (a *algorithms) doubleTree(c *core.Call, t collective.Tensor, op collective.Op) error {
	trees := dtree(c.Size(), c.Rank())
	var flows [2]*flow
	for i, nd := range trees {
		lo, hi := core.Block(t.Count(), 2, i)
		flows[i] = &flow{
			node: nd, name: [2]string{"dbtree tree 0", "dbtree tree 1"}[i], channel: uint8(i),
			dt: t.DType, op: op, buf: t.Slice(lo, hi).Data, chunk: a.chunkBytes(t.DType),
			up: true, down: true, window: window(c.Size()),
		}
	}
	// Binary trees: at most 2 children, so tree 1's slots start at 2·slots.
	return run(c, func(i int) int { return i * 2 * slots }, flows[:]...)
}

// window is the double binary tree's flow-control window in chunks: a round
// trip is at most 2⌈log2 n⌉ hops (btree is at most ⌈log2 n⌉+1 deep), plus
// the slots a child's chunks may wait in to be reduced.
func window(n int) int { return 2*bits.Len(uint(n)) + slots }
