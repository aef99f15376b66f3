package ps

import (
	"github.com/distbench/distbench/internal/core"
)

// shard is one server's contiguous piece of a tensor: bytes [lo, hi).
type shard struct {
	server int
	lo, hi int
}

func (s shard) len() int { return s.hi - s.lo }

// layout places a tensor of count elements of es bytes on k servers. It cuts
// the tensor into m contiguous, near-equal element ranges, where m is k for
// large tensors and fewer for small ones (no piece smaller than partition
// bytes, unless the whole tensor is), and gives piece i to server
// (rotate+i) mod k. Rotating by the round (the collective's sequence number,
// a training key's hash) spreads small tensors, which land on one server,
// over all of them, so bytes balance across servers over a run as well as
// within each large tensor. Every worker computes the same layout from the
// same arguments; empty tensors have no pieces.
func layout(count, es, k, rotate, partition int) []shard {
	if count <= 0 || k <= 0 {
		return nil
	}
	bytes := count * es
	m := min(k, count, max(1, (bytes+partition-1)/partition))
	out := make([]shard, m)
	for i := range m {
		lo, hi := core.Block(count, m, i)
		out[i] = shard{server: (rotate + i) % k, lo: lo * es, hi: hi * es}
	}
	return out
}

// region is a caller's byte range of a collective's virtual tensor: the
// memory to push from or pull into, at byte offset off.
type region struct {
	off  int
	data []byte
}

// piece is part of a region that falls within one chunk of one shard:
// offset is relative to the shard.
type piece struct {
	offset int
	data   []byte
}

// cut returns the parts of regions that fall within sh, split at the shard's
// chunk grid (multiples of chunk from the shard's start), in ascending order
// for regions given in ascending order.
func cut(regions []region, sh shard, chunk int) []piece {
	var out []piece
	for _, r := range regions {
		lo, hi := max(r.off, sh.lo), min(r.off+len(r.data), sh.hi)
		for lo < hi {
			end := min(hi, sh.lo+((lo-sh.lo)/chunk+1)*chunk)
			out = append(out, piece{offset: lo - sh.lo, data: r.data[lo-r.off : end-r.off]})
			lo = end
		}
	}
	return out
}

// within returns the part of a region inside sh as (offset in the shard,
// memory), or ok=false when they do not meet.
func within(r region, sh shard) (offset int, data []byte, ok bool) {
	lo, hi := max(r.off, sh.lo), min(r.off+len(r.data), sh.hi)
	if lo >= hi {
		return 0, nil, false
	}
	return lo - sh.lo, r.data[lo-r.off : hi-r.off], true
}
