package ps

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/collective"
	"google.golang.org/grpc/mem"
)

// roundKey names one collective on one server: the communicator's identity
// and the collective's sequence number in it, the same on every worker.
type roundKey struct {
	group uint64
	seq   int64
}

func (k roundKey) String() string { return fmt.Sprintf("group %016x #%d", k.group, k.seq) }

// round is a server's piece of one collective: an accumulator that pushes
// reduce (or copy) into, chunk by chunk, and that pulls read from once each
// chunk has every contribution. Synchronous aggregation per (key, round):
// chunk c is ready when contrib×len(c) bytes have arrived for it.
type round struct {
	key     roundKey
	desc    header // the fields every message of the round must agree on
	op      collective.Op
	dt      collective.DType
	chunk   int
	shard   int
	contrib int
	creator uint32 // the rank whose message made the round
	srv     *server

	// acc is the accumulator from the server's pool; nil for a round that
	// its colocated worker made by lending its own memory (see lend).
	acc []byte
	// lent is the colocated worker's own memory for the shard, once it has
	// joined the round by lending it; the chunks moved there (moved[c]) are
	// accumulated in it instead of acc.
	lent []byte

	// Per chunk, guarded by locks[c]: the bytes that have arrived for it;
	// hw, how far from its start at least one contribution has arrived
	// (what lies below is reduced into, what lies above copied: every
	// contribution to a chunk of a reduction arrives in order from its
	// start, so the one furthest ahead covered everything below it); and
	// whether its accumulator is the lent memory.
	locks   []sync.Mutex
	arrived []int
	hw      []int
	moved   []bool

	mu      sync.Mutex
	ready   []bool
	wake    chan struct{} // closed and replaced when a chunk becomes ready, if anyone waits
	waiting bool
	err     error
	pulled  uint64
	pushers []uint32 // ranks whose pushes have begun, for diagnostics
	pushed  []uint32 // ranks whose pushes have ended

	// released is closed once every byte has been pulled.
	released chan struct{}

	// refs is 1 while the round is live, plus one per accumulator buffer
	// lent to gRPC for a pull; at zero the accumulator returns to the pool.
	refs atomic.Int32
}

// newRound makes a round whose accumulator is acc, from the server's pool,
// or, when acc is nil, the memory its colocated worker lends (see lend).
func newRound(s *server, key roundKey, h *header, acc []byte) *round {
	shard, chunk := int(h.shard), int(h.chunk)
	n := (shard + chunk - 1) / chunk
	r := &round{
		key: key, desc: roundDesc(h), op: h.op, dt: h.dtype, chunk: chunk, shard: shard, contrib: int(h.contrib),
		creator: h.rank, srv: s,
		acc:      acc,
		locks:    make([]sync.Mutex, n),
		arrived:  make([]int, n),
		hw:       make([]int, n),
		moved:    make([]bool, n),
		ready:    make([]bool, n),
		wake:     make(chan struct{}),
		released: make(chan struct{}),
	}
	r.refs.Store(1)
	return r
}

// roundDesc keeps the fields that identify a round's shape.
func roundDesc(h *header) header {
	return header{dtype: h.dtype, op: h.op, contrib: h.contrib, chunk: h.chunk, shard: h.shard, pull: h.pull}
}

// matches reports how a message disagrees with the round, or nil.
func (r *round) matches(h *header) error {
	d := roundDesc(h)
	if d == r.desc {
		return nil
	}
	return fmt.Errorf("%w: in round %s, rank %d announced %s, but rank %d sent %s",
		collective.ErrMismatch, r.key, r.creator, describeDesc(&r.desc), h.rank, describeDesc(&d))
}

func describeDesc(d *header) string {
	op := "assign"
	if d.op != 0 {
		op = d.op.String()
	}
	return fmt.Sprintf("%s %s of a %d-byte shard in %d-byte chunks, %d contributions, %d bytes to pull",
		d.dtype, op, d.shard, d.chunk, d.contrib, d.pull)
}

func (r *round) chunkRange(c int) (lo, hi int) {
	lo = c * r.chunk
	return lo, min(lo+r.chunk, r.shard)
}

// noteRank records that rank has begun pushing.
func (r *round) noteRank(rank uint32) {
	r.mu.Lock()
	r.pushers = append(r.pushers, rank)
	r.mu.Unlock()
}

// noteDone records that rank's push has delivered all it had for this server.
func (r *round) noteDone(rank uint32) {
	r.mu.Lock()
	r.pushed = append(r.pushed, rank)
	r.mu.Unlock()
}

// put adds one pushed piece, the concatenation of segs, at h.offset. A
// reduction's pieces are whole chunks; the first to arrive is copied, the
// rest reduced into it. An assignment's pieces are copied where they go.
func (r *round) put(h *header, segs [][]byte) error {
	off, n := int(h.offset), int(h.length)
	if n == 0 {
		return nil // nothing to add; off may be the shard's end
	}
	c := off / r.chunk
	lo, hi := r.chunkRange(c)
	if off+n > hi {
		return fmt.Errorf("round %s: rank %d's piece [%d, %d) crosses the end of chunk %d [%d, %d)", r.key, h.rank, off, off+n, c, lo, hi)
	}
	if r.op != 0 && (off != lo || off+n != hi) {
		return fmt.Errorf("round %s: rank %d's piece [%d, %d) of a reduction is not chunk %d [%d, %d)", r.key, h.rank, off, off+n, c, lo, hi)
	}
	want := r.contrib * (hi - lo)
	r.locks[c].Lock()
	if r.arrived[c]+n > want {
		got := r.arrived[c]
		r.locks[c].Unlock()
		return fmt.Errorf("round %s: rank %d's piece brings chunk %d to %d bytes, more than the %d expected from %d contributions (a duplicate push, or workers that disagree about the group)",
			r.key, h.rank, c, got+n, want, r.contrib)
	}
	dst := r.chunkMem(c)[off-lo : off-lo+n]
	if r.op == 0 {
		copySegs(dst, segs)
	} else { // a whole chunk: reduce into what has arrived, copy the rest
		hw := r.hw[c]
		below, above := splitSegs(segs, hw)
		reduceSegs(r.dt, r.op, dst[:hw], below)
		copySegs(dst[hw:], above)
		r.hw[c] = n
	}
	r.arrived[c] += n
	full := r.arrived[c] == want
	r.locks[c].Unlock()
	if full {
		r.markReady(c)
	}
	return nil
}

// chunkMem is chunk c's accumulator: in acc, or in the lent memory once
// the chunk has moved there. r.locks[c] is held, or c is ready.
func (r *round) chunkMem(c int) []byte {
	lo, hi := r.chunkRange(c)
	if r.moved[c] {
		return r.lent[lo:hi]
	}
	return r.acc[lo:hi]
}

// markReady records that chunk c has every contribution and wakes its
// waiters.
func (r *round) markReady(c int) {
	r.mu.Lock()
	r.ready[c] = true
	if r.waiting {
		r.waiting = false
		close(r.wake)
		r.wake = make(chan struct{})
	}
	r.mu.Unlock()
}

// fail wakes every waiter with err.
func (r *round) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
		close(r.wake)
		r.wake = make(chan struct{})
	}
}

// await blocks until chunk c is ready, the round fails or ctx ends.
func (r *round) await(ctx context.Context, c int) error {
	start := time.Time{}
	for {
		r.mu.Lock()
		if r.err != nil {
			err := r.err
			r.mu.Unlock()
			return err
		}
		if r.ready[c] {
			r.mu.Unlock()
			return nil
		}
		r.waiting = true
		wake := r.wake
		r.mu.Unlock()
		if start.IsZero() {
			start = time.Now()
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return r.waitErr(ctx, c, time.Since(start))
		}
	}
}

// waitErr explains what a pull that gave up was waiting for.
func (r *round) waitErr(ctx context.Context, c int, waited time.Duration) error {
	what := r.describe(c)
	if ctx.Err() == context.DeadlineExceeded {
		return &collective.TimeoutError{After: waited, Waiting: what}
	}
	return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
}

// describe says how far chunk c is from complete, which ranks have begun
// pushing, and, when every worker contributes to every element (a
// reduction over the whole world), which it still waits for, and where
// they are.
func (r *round) describe(c int) string {
	lo, hi := r.chunkRange(c)
	r.locks[c].Lock()
	got := r.arrived[c]
	r.locks[c].Unlock()
	r.mu.Lock()
	began, ended := sortedSet(r.pushers), sortedSet(r.pushed)
	r.mu.Unlock()
	names := make([]string, len(began))
	for i, x := range began {
		names[i] = fmt.Sprint(x)
	}
	what := fmt.Sprintf("chunk %d of round %s: %d of %d bytes arrived from %d expected contributions; pushes began from ranks [%s]",
		c, r.key, got, r.contrib*(hi-lo), r.contrib, strings.Join(names, " "))
	if r.op == 0 || r.contrib != r.srv.workers {
		return what // which ranks owe what is not known here
	}
	var unfinished, missing []string
	for w := range uint32(r.srv.workers) {
		_, begun := slices.BinarySearch(began, w)
		_, done := slices.BinarySearch(ended, w)
		switch {
		case !begun:
			missing = append(missing, r.srv.whereIs(w))
		case !done:
			unfinished = append(unfinished, r.srv.whereIs(w))
		}
	}
	if len(unfinished) > 0 {
		what += "; unfinished from " + strings.Join(unfinished, ", ")
	}
	if len(missing) > 0 {
		what += "; none yet from " + strings.Join(missing, ", ")
	}
	return what
}

func sortedSet(s []uint32) []uint32 {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// firstIncomplete is the first chunk that has not every contribution, or -1.
func (r *round) firstIncomplete() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Index(r.ready, false)
}

// read streams bytes [off, off+n) of the result to emit, chunk by chunk as
// each becomes ready, and accounts for them once all are sent.
func (r *round) read(ctx context.Context, off, n int, emit func(lo, hi int) error) error {
	for pos, end := off, off+n; pos < end; {
		c := pos / r.chunk
		_, hi := r.chunkRange(c)
		hi = min(hi, end)
		if err := r.await(ctx, c); err != nil {
			return err
		}
		if err := emit(pos, hi); err != nil {
			return err
		}
		pos = hi
	}
	return r.account(n)
}

// account records that n bytes of the result have been pulled; once all
// have, the round is released.
func (r *round) account(n int) error {
	r.mu.Lock()
	r.pulled += uint64(n)
	pulled := r.pulled
	done := r.pulled == r.desc.pull
	over := r.pulled > r.desc.pull
	r.mu.Unlock()
	if over {
		return fmt.Errorf("round %s: %d bytes pulled, more than the %d announced", r.key, pulled, r.desc.pull)
	}
	if done {
		close(r.released)
		r.srv.release(r)
		r.unref()
	}
	return nil
}

// lend returns bytes [lo, hi) of the accumulator as a buffer for gRPC to
// send without copying; the accumulator is not reused until gRPC frees it.
// Buffers at or below gRPC's pooling threshold are copied instead, since
// gRPC does not report when it is done with those.
func (r *round) lend(lo, hi int) mem.Buffer {
	if mem.IsBelowBufferPoolingThreshold(hi - lo) {
		return mem.Copy(r.acc[lo:hi], mem.DefaultBufferPool())
	}
	r.refs.Add(1)
	b := r.acc[lo:hi:hi]
	return mem.NewBuffer(&b, roundLender{r})
}

func (r *round) unref() {
	if r.refs.Add(-1) == 0 && r.acc != nil {
		r.srv.unreserve(len(r.acc))
		r.srv.pool.put(r.acc)
	}
}

// roundLender is the mem.BufferPool gRPC returns lent accumulator buffers to.
type roundLender struct{ r *round }

func (l roundLender) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

func (l roundLender) Put(*[]byte) { l.r.unref() }
