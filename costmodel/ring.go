package costmodel

import (
	"cmp"
	"slices"

	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// The ring's schedules, built by the rules of strategies/ring (allreduce.go,
// pipeline.go, whole.go, broadcast.go) from the shapes it runs
// (internal/shapes); schedule_test.go checks them message for message
// against the real code's recorded schedules.

// ringAutoWhole reports whether strategies/ring's algo=auto passes bytes
// whole around a ring of n (rsag otherwise): the strategy's own rule
// (shapes.RingAutoWhole), so that the generated schedules, the closed forms
// and the calibration's series switch where the code does.
func ringAutoWhole(n int, bytes int64) bool { return shapes.RingAutoWhole(n, int(bytes)) }

// ringChunk is the ring's pipeline chunk for a span of bytes: the chunk
// option, or automatic, rounded to whole elements.
func ringChunk(opt, span, limit, es int) int {
	c := opt
	if c == 0 {
		c = min(max(span/4, shapes.RingMinAutoChunk), limit)
	}
	return chunkBytes(c, es)
}

type ringItem struct{ g, ch int }

// ringOrder is pipeline.go's pass.order: every step's chunks, in the
// wavefront order every rank sends them.
func ringOrder(steps int, chunks func(g int) int, lag int) []ringItem {
	var items []ringItem
	for g := range steps {
		for ch := range chunks(g) {
			items = append(items, ringItem{g, ch})
		}
	}
	slices.SortStableFunc(items, func(a, b ringItem) int {
		return cmp.Or(cmp.Compare(a.ch+lag*a.g, b.ch+lag*b.g), cmp.Compare(b.g, a.g))
	})
	return items
}

// RingRSAG is the segmented ring allreduce (algo=rsag) of bytes in
// elements of es bytes with chunk option chunk (0: automatic) on n ranks.
func RingRSAG(n int, bytes int64, es, chunk int) Program {
	count := int(bytes) / es
	segs := make([][2]int, n)
	largest, equal := 0, true
	for i := range n {
		lo, hi := core.Block(count, n, i)
		segs[i] = [2]int{lo * es, hi * es}
		largest = max(largest, (hi-lo)*es)
		equal = equal && hi-lo == segs[0][1]/es-segs[0][0]/es
	}
	c := ringChunk(chunk, largest, shapes.RingDefaultChunk, es)
	nchunks := func(s int) int { return (segs[s][1] - segs[s][0] + c - 1) / c }
	lag := 2
	if c >= shapes.RingLagOneChunk {
		lag = 1
	}
	steps := 2 * (n - 1)
	build := func(r int, rel bool) []Op {
		sendSeg := func(g int) int { return core.Mod(r-g, n) }
		recvSeg := func(g int) int { return core.Mod(r-g-1, n) }
		recvOrder := ringOrder(steps, func(g int) int { return nchunks(recvSeg(g)) }, lag)
		sendOrder := ringOrder(steps, func(g int) int { return nchunks(sendSeg(g)) }, lag)
		seq := make([][]int32, steps) // seq[g][ch]: the receive's number
		for g := range steps {
			seq[g] = make([]int32, nchunks(recvSeg(g)))
		}
		for i, it := range recvOrder {
			seq[it.g][it.ch] = int32(i)
		}
		right, left := int32(core.Mod(r+1, n)), core.Mod(r-1, n)
		if rel {
			right, left = 1, -1
		}
		ops := make([]Op, 0, len(sendOrder))
		for _, it := range sendOrder {
			s := segs[sendSeg(it.g)]
			lo := s[0] + it.ch*c
			o := Op{Kind: Send, Peer: right, Rel: rel, Slot: -1, Bytes: int64(min(lo+c, s[1]) - lo), Lo: int64(lo), Reduce: it.g < n-1}
			if it.g > 0 {
				o.after(Dep{Peer: int32(left), Seq: seq[it.g-1][it.ch]})
			}
			ops = append(ops, o)
		}
		return ops
	}
	if equal && n > 8 { // every rank's schedule is the same, turned
		return &ringProgram{n: n, ops: build(0, true)}
	}
	p := newRanks(n)
	for r := range n {
		for _, o := range build(r, false) {
			p.send(r, o)
		}
	}
	return p
}

// ringProgram is a ring schedule that every rank runs relative to itself.
type ringProgram struct {
	n   int
	ops []Op
}

func (p *ringProgram) Size() int         { return p.n }
func (p *ringProgram) Ops(int) []Op      { return p.ops }
func (p *ringProgram) Peers(r int) []int { return []int{core.Mod(r+1, p.n)} }
func (p *ringProgram) Slots(int) int     { return 0 }

// RingWhole is the whole-buffer ring allreduce (algo=whole): n−1 steps,
// each forwarding the buffer received at the step before, then n−1 local
// reductions of the whole buffer.
func RingWhole(n int, bytes int64) Program {
	p := newRanks(n)
	for r := range n {
		right, left := core.Mod(r+1, n), core.Mod(r-1, n)
		for g := range n - 1 {
			o := Op{Peer: int32(right), Bytes: bytes}
			if g > 0 {
				o.after(recvDep(left, 0, g-1))
			}
			p.send(r, o)
		}
		if n > 1 {
			o := Op{Kind: Compute, Slot: -1, Bytes: int64(n-1) * bytes}
			o.after(recvDep(left, 0, n-2))
			p.ops[r] = append(p.ops[r], o)
		}
	}
	return p
}

// RingAllReduce is algo=auto: whole on small buffers, rsag above (ringAutoWhole).
func RingAllReduce(n int, bytes int64, es, chunk int) Program {
	if ringAutoWhole(n, bytes) {
		return RingWhole(n, bytes)
	}
	return RingRSAG(n, bytes, es, chunk)
}

// ChainBroadcast is the ring's broadcast: a pipelined chain from root,
// each rank forwarding each chunk as it arrives.
func ChainBroadcast(n int, bytes int64, es, chunk, root int) Program {
	c := ringChunk(chunk, int(bytes), shapes.RingDefaultChunk, es)
	p := newRanks(n)
	for r := range n {
		pos := core.Mod(r-root, n)
		if pos == n-1 {
			continue
		}
		k := 0
		for lo := int64(0); lo < bytes; lo += int64(c) {
			o := Op{Peer: int32(core.Mod(r+1, n)), Bytes: min(int64(c), bytes-lo), Lo: lo}
			if pos > 0 {
				o.after(recvDep(core.Mod(r-1, n), 0, k))
			}
			p.send(r, o)
			k++
		}
	}
	return p
}
