// Accumulating a round over the mesh: contributions reduced straight from
// the connection, and the colocated worker's own memory lent as the
// accumulator of an in-place reduction.

package ps

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
)

// absorb adds bytes [off, off+len(src)) of one contribution to chunk c (off
// relative to the chunk's start), as the mesh reads them from the
// connection, a few kilobytes at a time: below the chunk's high-water mark
// (something has arrived there) it reduces, above it copies, so the first
// arrival lands in the accumulator with no staging buffer, and two workers'
// contributions to one chunk interleave safely under the chunk's lock.
func (r *round) absorb(c, off int, src []byte) error {
	lo, hi := r.chunkRange(c)
	end := off + len(src)
	r.locks[c].Lock()
	if end > hi-lo || r.arrived[c]+len(src) > r.contrib*(hi-lo) {
		got := r.arrived[c]
		r.locks[c].Unlock()
		return fmt.Errorf("round %s: a piece brings chunk %d to %d bytes, more than the %d expected from %d contributions (a duplicate push, or workers that disagree about the group)",
			r.key, c, got+len(src), r.contrib*(hi-lo), r.contrib)
	}
	m := r.chunkMem(c)
	if r.op == 0 {
		copy(m[off:end], src)
	} else {
		split := min(max(r.hw[c], off), end)
		if split > off {
			kernels.Reduce(r.dt, r.op, m[off:split], src[:split-off])
		}
		copy(m[split:end], src[split-off:])
		r.hw[c] = max(r.hw[c], end)
	}
	r.arrived[c] += len(src)
	full := r.arrived[c] == r.contrib*(hi-lo)
	r.locks[c].Unlock()
	if full {
		r.markReady(c)
	}
	return nil
}

// absorber returns the reduction a mesh receive of one pushed piece hands
// the message to: buf is the memory the receive was posted with (a
// transport hands Into sub-slices of it, whose position in it tells where
// in the chunk the bytes belong); the bytes go wherever chunk c's
// accumulator is when they arrive. onErr gets a piece the round refuses.
func (r *round) absorber(c, off int, buf []byte, onErr func(error)) func(dst, src []byte) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return func(dst, src []byte) {
		at := int(uintptr(unsafe.Pointer(unsafe.SliceData(dst))) - base)
		if err := r.absorb(c, off+at, src); err != nil {
			onErr(err)
		}
	}
}

// join makes mem, the colocated worker's memory for the shard, holding its
// contribution, the round's accumulator, chunk by chunk: what other
// workers' pushes brought into the pool's accumulator before it joined is
// reduced into mem, and everything after lands in mem directly.
func (r *round) join(mem []byte) error {
	if r.op == 0 || len(mem) != r.shard {
		return fmt.Errorf("round %s: the colocated worker lent %d bytes to a %d-byte %s round", r.key, len(mem), r.shard, describeDesc(&r.desc))
	}
	r.mu.Lock()
	if r.lent != nil {
		r.mu.Unlock()
		return fmt.Errorf("round %s: the colocated worker joined twice", r.key)
	}
	r.lent = mem
	r.mu.Unlock()
	for c := range r.locks {
		lo, hi := r.chunkRange(c)
		n := hi - lo
		r.locks[c].Lock()
		if r.arrived[c]+n > r.contrib*n {
			r.locks[c].Unlock()
			return fmt.Errorf("round %s: chunk %d has all %d contributions already, before the colocated worker's", r.key, c, r.contrib)
		}
		if hw := r.hw[c]; hw > 0 {
			kernels.Reduce(r.dt, r.op, mem[lo:lo+hw], r.acc[lo:lo+hw])
		}
		r.moved[c], r.hw[c] = true, n
		r.arrived[c] += n
		full := r.arrived[c] == r.contrib*n
		r.locks[c].Unlock()
		if full {
			r.markReady(c)
		}
	}
	return nil
}

// lendFrom sets up a round that its colocated worker makes by lending mem:
// every chunk already holds that worker's contribution, in mem.
func (r *round) lendFrom(mem []byte) {
	r.lent = mem
	for c := range r.locks {
		lo, hi := r.chunkRange(c)
		r.moved[c], r.hw[c], r.arrived[c] = true, hi-lo, hi-lo
		r.ready[c] = r.contrib == 1
	}
}

// awaitReleased blocks until every byte of the round has been pulled, the
// round fails, or ctx ends.
func (r *round) awaitReleased(ctx context.Context) error {
	start := time.Now()
	for {
		r.mu.Lock()
		err, wake := r.err, r.wake
		r.waiting = true
		r.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-r.released:
			return nil
		case <-wake:
		case <-ctx.Done():
			r.mu.Lock()
			what := fmt.Sprintf("the other workers' pulls of round %s (%d of %d bytes pulled)", r.key, r.pulled, r.desc.pull)
			r.mu.Unlock()
			if c := r.firstIncomplete(); c >= 0 {
				what = r.describe(c)
			}
			if ctx.Err() == context.DeadlineExceeded {
				return &collective.TimeoutError{After: time.Since(start), Waiting: what}
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// lendLocal is the colocated worker's part in an in-place reduction over the
// mesh: its memory for the shard, which holds its contribution, is the
// round's accumulator (no copy in), the other workers' pushes are reduced
// into it and their pulls sent from it, and its own pull is already in
// place (no copy out). It returns once every other worker has pulled the
// result, after which the worker may change mem again.
func (s *server) lendLocal(ctx context.Context, h header, mem []byte) error {
	r, made, err := s.roundFor(&h, mem)
	if err == nil {
		r.noteRank(h.rank)
		if !made {
			err = r.join(mem)
		}
	}
	if err == nil {
		r.noteDone(h.rank)
		err = r.account(len(mem))
	}
	if err == nil {
		err = r.awaitReleased(ctx)
	}
	if err != nil {
		return s.rejectLocal(h.rank, err)
	}
	return nil
}

// result is bytes [lo, hi) of a ready chunk's result.
func (r *round) result(lo, hi int) []byte {
	c := lo / r.chunk
	clo, _ := r.chunkRange(c)
	return r.chunkMem(c)[lo-clo : hi-clo]
}

// splitSegs splits the concatenation of segs at byte n.
func splitSegs(segs [][]byte, n int) (below, above [][]byte) {
	for i, s := range segs {
		if n <= 0 {
			return below, segs[i:]
		}
		if len(s) <= n {
			below = append(below, s)
			n -= len(s)
			continue
		}
		below = append(below, s[:n])
		return below, append([][]byte{s[n:]}, segs[i+1:]...)
	}
	return below, nil
}
