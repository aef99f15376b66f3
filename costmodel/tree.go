package costmodel

import (
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// The tree's schedules, built by the rules of strategies/tree (dbtree.go,
// pipeline.go, rd.go) from the trees it runs (internal/shapes);
// schedule_test.go checks them against the real code.

// DoubleTree is the double binary tree allreduce (algo=dbtree): each half
// of the buffer reduced up one tree and broadcast down it, pipelined in
// chunks, the two trees on channels 0 and 1.
func DoubleTree(n int, bytes int64, es, chunk int) Program {
	if chunk == 0 {
		chunk = shapes.TreeDefaultChunk
	}
	c := chunkBytes(chunk, es)
	count := int(bytes) / es
	window := shapes.TreeWindow(n)
	p := newRanks(n)
	for r := range n {
		trees := shapes.DoubleTree(n, r)
		for i, nd := range trees {
			lo, hi := core.Block(count, 2, i)
			size := (hi - lo) * es
			base := int64(lo * es)
			nk := (size + c - 1) / c
			rng := func(k int) (int64, int64) {
				return base + int64(k*c), int64(min((k+1)*c, size) - k*c)
			}
			ready := make([]Dep, nk)
			has := make([]bool, nk)
			if n > 1 && len(nd.Children) > 0 {
				for k := range nk {
					ready[k], has[k] = recvDep(nd.Children[0], i, k), true
				}
				for _, child := range nd.Children[1:] {
					for k := range nk {
						_, b := rng(k)
						o := Op{Kind: Compute, Bytes: b, Slot: p.slot(r)}
						o.after(ready[k])
						o.after(recvDep(child, i, k))
						p.ops[r] = append(p.ops[r], o)
						ready[k] = localDep(int(o.Slot))
					}
				}
			}
			if nd.Parent >= 0 {
				for k := range nk {
					at, b := rng(k)
					o := Op{Peer: int32(nd.Parent), Ch: uint8(i), Bytes: b, Lo: at, Reduce: true}
					if has[k] {
						o.after(ready[k])
					}
					if k >= window {
						o.after(recvDep(nd.Parent, i, k-window))
					}
					p.send(r, o)
				}
			}
			for _, child := range nd.Children {
				for k := range nk {
					at, b := rng(k)
					o := Op{Peer: int32(child), Ch: uint8(i), Bytes: b, Lo: at}
					if nd.Parent >= 0 {
						o.after(recvDep(nd.Parent, i, k))
					} else if has[k] {
						o.after(ready[k])
					}
					p.send(r, o)
				}
			}
		}
	}
	// A message up the tree to a parent's first child slot is reduced as
	// read; to its other children's slots it is copied and reduced by a
	// Compute op: mark those as not reducing.
	for r := range n {
		for i := range p.ops[r] {
			o := &p.ops[r][i]
			if o.Kind != Send || !o.Reduce {
				continue
			}
			par := shapes.DoubleTree(n, int(o.Peer))[o.Ch]
			o.Reduce = par.Children[0] == r
		}
	}
	return p
}

// RecursiveDoubling is algo=rd: log2 p exchanges of the whole buffer
// between partners r XOR 2^k (p the largest power of two ≤ n), the ranks
// past p folded in before and given the result after.
func RecursiveDoubling(n int, bytes int64) Program {
	p := newRanks(n)
	pw := 1
	for pw*2 <= n {
		pw *= 2
	}
	// The fold and unfold involve 2(n−pw) ranks, the exchanges pw: the
	// others wait, and leave the host's cores to them.
	fold, mid := uint16(min(2*(n-pw), 1<<16-1)), uint16(min(pw, 1<<16-1))
	for r := range n {
		if r >= pw {
			p.send(r, Op{Peer: int32(r - pw), Bytes: bytes, Active: fold})
			continue
		}
		var prev Dep
		hasPrev := false
		if extra := r + pw; extra < n {
			o := Op{Kind: Compute, Bytes: bytes, Slot: p.slot(r), Active: fold}
			o.after(recvDep(extra, 0, 0))
			p.ops[r] = append(p.ops[r], o)
			prev, hasPrev = localDep(int(o.Slot)), true
		}
		for mask := 1; mask < pw; mask <<= 1 {
			partner := r ^ mask
			o := Op{Peer: int32(partner), Bytes: bytes, Active: mid}
			if hasPrev {
				o.after(prev)
			}
			p.send(r, o)
			red := Op{Kind: Compute, Bytes: bytes, Slot: p.slot(r), Active: mid}
			red.after(recvDep(partner, 0, 0))
			if hasPrev {
				red.after(prev)
			}
			p.ops[r] = append(p.ops[r], red)
			prev, hasPrev = localDep(int(red.Slot)), true
		}
		if extra := r + pw; extra < n {
			o := Op{Peer: int32(extra), Bytes: bytes, Active: fold}
			if hasPrev {
				o.after(prev)
			}
			p.send(r, o)
		}
	}
	return p
}

// treeAutoRD reports whether strategies/tree's algo=auto runs recursive
// doubling on bytes (the double tree otherwise): the strategy's own rule
// (shapes.TreeAutoRD), so that the generated schedules, the closed forms and
// the calibration's series switch where the code does.
func treeAutoRD(bytes int64) bool { return shapes.TreeAutoRD(int(bytes)) }

// TreeAllReduce is algo=auto: rd on small buffers, dbtree above (treeAutoRD).
func TreeAllReduce(n int, bytes int64, es, chunk int) Program {
	if treeAutoRD(bytes) {
		return RecursiveDoubling(n, bytes)
	}
	return DoubleTree(n, bytes, es, chunk)
}

// BinomialBroadcast is the tree's broadcast: down a binomial tree from
// root, pipelined in chunks, each rank forwarding each chunk to its
// children (the largest subtree first) as it arrives.
func BinomialBroadcast(n int, bytes int64, es, chunk, root int) Program {
	if chunk == 0 {
		chunk = shapes.TreeDefaultChunk
	}
	c := int64(chunkBytes(chunk, es))
	nk := int((bytes + c - 1) / c)
	p := newRanks(n)
	for r := range n {
		nd := shapes.Binomial(n, root, r)
		for _, child := range nd.Children {
			for k := range nk {
				o := Op{Peer: int32(child), Bytes: min(c, bytes-int64(k)*c), Lo: int64(k) * c}
				if nd.Parent >= 0 {
					o.after(recvDep(nd.Parent, 0, k))
				}
				p.send(r, o)
			}
		}
	}
	return p
}
