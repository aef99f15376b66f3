package ps

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
	"google.golang.org/grpc/mem"
)

// maxAhead bounds how many steps past the last applied one a synchronous
// shard accumulates gradients for, and so its memory.
const maxAhead = 8

// paramShard is a server's piece of one training key: the parameters, the
// optimizer's state, and the gradients on their way in.
//
// Synchronous (staleness 0): the gradients of step t are summed until every
// worker's has arrived, then applied once, as their mean, in step order,
// with the learning rate every one of them carried, which is what
// allreduce-averaged data parallelism computes.
//
// Asynchronous (staleness s > 0): each worker's gradient is applied as it
// arrives, with the learning rate it carried, scaled by 1/workers so that a
// round of pushes moves the parameters as far as a synchronous step. Reads
// are bounded instead: a pull at step t waits until the slowest worker has
// pushed step t−s (stale synchronous parallel).
type paramShard struct {
	srv       *server
	name      string
	desc      header // shard, workers, staleness, momentum: agreed by every init
	shard     int    // bytes
	workers   int
	staleness int
	mom       float32

	mu        sync.Mutex
	wake      chan struct{}
	err       error
	initBytes int
	p, v      []float32
	pb        []byte // p's bytes
	applied   int64  // sync: steps applied so far
	steps     map[int64]*gradStep
	next      []int64 // per worker: the step its next push must be
	pushed    []int64 // per worker: the last step fully pushed
	scratch   []float32
}

type gradStep struct {
	// per holds each worker's gradient, summed in rank order once all
	// have arrived: the same bits whatever order they arrived in, over
	// either transport, as a reference computed in rank order.
	per   [][]float32
	bytes int
	lr    float32 // the learning rate the step's first piece carried
	rank  uint32  // whose piece that was
}

func paramDesc(h *header) header {
	return header{shard: h.shard, contrib: h.contrib, aux: h.aux, momentum: h.momentum, chunk: h.chunk}
}

func newParamShard(h *header) *paramShard {
	n := int(h.shard) / 4
	p := &paramShard{
		name: h.name, desc: paramDesc(h), shard: int(h.shard), workers: int(h.contrib), staleness: int(h.aux),
		mom:   h.momentum,
		wake:  make(chan struct{}),
		p:     make([]float32, n),
		v:     make([]float32, n),
		steps: map[int64]*gradStep{},
		next:  make([]int64, h.contrib),
	}
	p.pb = f32bytes(p.p)
	p.pushed = make([]int64, h.contrib)
	for i := range p.pushed {
		p.pushed[i] = -1
	}
	return p
}

func f32bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

// params returns the shard of a training key, making it on the first init.
func (s *server) paramShard(h *header) (*paramShard, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != nil {
		return nil, s.failure
	}
	p := s.params[h.name]
	if p == nil {
		if h.kind != kindInit {
			return nil, fmt.Errorf("%w: key %q has not been initialised on server %d (call InitParams first)", collective.ErrInvalid, h.name, s.index)
		}
		if h.contrib == 0 || int(h.contrib) != s.workers {
			return nil, fmt.Errorf("%w: key %q: init for %d workers on a server of a %d-worker job", collective.ErrMismatch, h.name, h.contrib, s.workers)
		}
		// Parameters and momenta, kept until the server stops.
		if err := s.reserve(2*int(h.shard), fmt.Sprintf("key %q", h.name)); err != nil {
			return nil, err
		}
		p = newParamShard(h)
		p.srv = s
		s.params[h.name] = p
		return p, nil
	}
	if d := paramDesc(h); h.kind == kindInit && d != p.desc {
		return nil, fmt.Errorf("%w: key %q: rank %d's init (%d bytes, %d workers, staleness %d, momentum %g) disagrees with the first (%d bytes, %d workers, staleness %d, momentum %g)",
			collective.ErrMismatch, h.name, h.rank, d.shard, d.contrib, d.aux, d.momentum,
			p.desc.shard, p.desc.contrib, p.desc.aux, p.desc.momentum)
	}
	if h.shard != p.desc.shard {
		return nil, fmt.Errorf("%w: key %q: rank %d addresses a %d-byte shard, but it holds %d", collective.ErrMismatch, h.name, h.rank, h.shard, p.desc.shard)
	}
	return p, nil
}

// acceptParams takes one message of an init or gradient push.
func (s *server) acceptParams(st *pushState, h *header, segs [][]byte) error {
	if st.p == nil {
		p, err := s.paramShard(h)
		if err != nil {
			return err
		}
		if h.kind == kindGrad {
			if err := p.beginStep(h); err != nil {
				return err
			}
			st.applied = true
		}
		st.p, st.step = p, h.seq
	} else if h.name != st.p.name || h.seq != st.step {
		return fmt.Errorf("a push stream for key %q step %d switched to key %q step %d", st.p.name, st.step, h.name, h.seq)
	}
	var err error
	if h.kind == kindInit {
		err = st.p.putInit(h, segs)
	} else {
		err = st.p.putGrad(h, segs)
	}
	if err != nil {
		return err
	}
	st.bytes += int(h.length)
	st.applied = st.applied || h.length > 0
	return nil
}

func (p *paramShard) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
		p.notify()
	}
}

// notify wakes every waiter; p.mu is held.
func (p *paramShard) notify() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// wait blocks until cond holds (evaluated under p.mu), the shard fails or
// ctx ends; what describes the wait for a timeout.
func (p *paramShard) wait(ctx context.Context, cond func() bool, what func() string) error {
	start := time.Now()
	for {
		p.mu.Lock()
		if p.err != nil {
			err := p.err
			p.mu.Unlock()
			return err
		}
		if cond() {
			p.mu.Unlock()
			return nil
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			p.mu.Lock()
			w := what()
			p.mu.Unlock()
			if ctx.Err() == context.DeadlineExceeded {
				return &collective.TimeoutError{After: time.Since(start), Waiting: w}
			}
			return fmt.Errorf("waiting for %s: %w", w, ctx.Err())
		}
	}
}

func (p *paramShard) inited() bool { return p.initBytes == p.shard }

// putInit installs rank 0's initial values; other ranks' inits carry none.
func (p *paramShard) putInit(h *header, segs [][]byte) error {
	if h.length == 0 {
		return nil
	}
	if h.rank != 0 {
		return fmt.Errorf("%w: key %q: rank %d sent initial values; only rank 0's are used", collective.ErrInvalid, p.name, h.rank)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inited() {
		return fmt.Errorf("%w: key %q is already initialised", collective.ErrInvalid, p.name)
	}
	if p.initBytes+int(h.length) > p.shard {
		return fmt.Errorf("%w: key %q: initial values beyond the shard's %d bytes (a piece sent twice?)", collective.ErrInvalid, p.name, p.shard)
	}
	copySegs(p.pb[h.offset:h.offset+h.length], segs)
	p.initBytes += int(h.length)
	if p.inited() {
		p.notify()
	}
	return nil
}

// beginStep checks that a worker's gradients come one step after another.
func (p *paramShard) beginStep(h *header) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := int(h.rank)
	if w >= p.workers {
		return fmt.Errorf("%w: key %q: gradient from rank %d of a %d-worker job", collective.ErrInvalid, p.name, w, p.workers)
	}
	if !p.inited() {
		return fmt.Errorf("%w: key %q: gradient before the initial values", collective.ErrInvalid, p.name)
	}
	if h.seq != p.next[w] {
		return fmt.Errorf("%w: key %q: rank %d pushed step %d, expected step %d (steps count from 0, one push each)",
			collective.ErrInvalid, p.name, w, h.seq, p.next[w])
	}
	if p.staleness == 0 && h.seq >= p.applied+maxAhead {
		return fmt.Errorf("%w: key %q: rank %d pushed step %d while step %d is not yet complete (at most %d steps ahead)",
			collective.ErrInvalid, p.name, w, h.seq, p.applied, maxAhead)
	}
	p.next[w]++
	return nil
}

// putGrad takes one piece of a gradient.
func (p *paramShard) putGrad(h *header, segs [][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	lo, n := int(h.offset)/4, int(h.length)/4
	if p.staleness > 0 {
		// Apply now: momentum SGD on g/workers, at this push's rate.
		if cap(p.scratch) < n {
			p.scratch = make([]float32, n)
		}
		g := p.scratch[:n]
		copySegs(f32bytes(g), segs)
		p.sgd(lo, g, float32(p.workers), h.lr)
		return nil
	}
	st := p.steps[h.seq]
	if st == nil {
		if err := p.srv.reserve(p.workers*p.shard, fmt.Sprintf("key %q step %d", p.name, h.seq)); err != nil {
			return err
		}
		st = &gradStep{per: make([][]float32, p.workers), lr: h.lr, rank: h.rank}
		p.steps[h.seq] = st
	} else if h.lr != st.lr {
		return fmt.Errorf("%w: key %q step %d: rank %d pushed learning rate %g, rank %d pushed %g (every worker's gradient of a step must carry the same rate)",
			collective.ErrMismatch, p.name, h.seq, h.rank, h.lr, st.rank, st.lr)
	}
	if st.bytes+int(h.length) > p.workers*p.shard {
		return fmt.Errorf("key %q step %d: more gradient bytes than %d workers send", p.name, h.seq, p.workers)
	}
	g := st.per[h.rank]
	if g == nil {
		g = make([]float32, p.shard/4)
		st.per[h.rank] = g
	}
	copySegs(f32bytes(g[lo:lo+n]), segs)
	st.bytes += int(h.length)
	// Apply every complete step in order.
	for {
		st := p.steps[p.applied]
		if st == nil || st.bytes < p.workers*p.shard {
			break
		}
		sum := st.per[0]
		for _, g := range st.per[1:] {
			kernels.Reduce(collective.Float32, collective.Sum, f32bytes(sum), f32bytes(g))
		}
		p.sgd(0, sum, float32(p.workers), st.lr)
		delete(p.steps, p.applied)
		p.srv.unreserve(p.workers * p.shard)
		p.applied++
		p.notify()
	}
	return nil
}

// sgd applies momentum SGD with gradient g/div and learning rate lr at
// elements lo… of the shard: v = momentum·v + g/div; p −= lr·v.
func (p *paramShard) sgd(lo int, g []float32, div, lr float32) {
	ps, vs := p.p[lo:lo+len(g)], p.v[lo:lo+len(g)]
	for i, gi := range g {
		vs[i] = p.mom*vs[i] + gi/div
		ps[i] -= lr * vs[i]
	}
}

// finish ends an init (it returns once the values are in) or a gradient
// push (which must have covered the shard).
func (p *paramShard) finish(ctx context.Context, st *pushState) error {
	if st.kind == kindInit {
		return p.wait(ctx, p.inited, func() string {
			return fmt.Sprintf("rank 0's initial values of key %q (%d of %d bytes arrived)", p.name, p.initBytes, p.shard)
		})
	}
	if st.bytes != p.shard {
		return fmt.Errorf("key %q step %d: rank %d pushed %d of the shard's %d bytes", p.name, st.step, st.rank, st.bytes, p.shard)
	}
	if p.staleness > 0 {
		p.mu.Lock()
		p.pushed[st.rank] = st.step
		p.notify()
		p.mu.Unlock()
	}
	return nil
}

// waitingFor says what a pull of step need waits for; p.mu is held.
func (p *paramShard) waitingFor(need int64) string {
	if !p.inited() {
		return fmt.Sprintf("the initial values of key %q (%d of %d bytes arrived)", p.name, p.initBytes, p.shard)
	}
	var late []int
	for w, t := range p.pushed {
		if p.staleness == 0 && p.next[w] <= need || p.staleness > 0 && t < need {
			late = append(late, w)
		}
	}
	return fmt.Sprintf("key %q: every worker's step %d (staleness %d; through step %d; behind: ranks %v)", p.name, need, p.staleness, p.through(), late)
}

// through is the last step whose every worker's gradient is applied.
func (p *paramShard) through() int64 {
	if p.staleness == 0 {
		return p.applied - 1
	}
	return slices.Min(p.pushed)
}

// paramsFor returns the shard of a training key that a parameter pull
// asks for.
func (s *server) paramsFor(h *header) (*paramShard, error) {
	s.mu.Lock()
	p := s.params[h.name]
	failure := s.failure
	s.mu.Unlock()
	if failure != nil {
		return nil, failure
	}
	if p == nil {
		return nil, fmt.Errorf("%w: key %q has not been initialised on server %d (call InitParams first)", collective.ErrInvalid, h.name, s.index)
	}
	if h.shard != p.desc.shard {
		return nil, fmt.Errorf("%w: key %q: rank %d addresses a %d-byte shard, but it holds %d", collective.ErrMismatch, h.name, h.rank, h.shard, p.desc.shard)
	}
	return p, nil
}

// pullParams streams [h.offset, h.offset+h.length) of p's parameters once
// every worker's gradients up to step h.seq − staleness are applied. emit
// owns each piece and returns it to mem.DefaultBufferPool.
func (s *server) pullParams(ctx context.Context, p *paramShard, h *header, emit func(lo int, b *[]byte) error) error {
	need := h.seq - int64(p.staleness)
	err := p.wait(ctx, func() bool { return p.inited() && p.through() >= need }, func() string { return p.waitingFor(need) })
	if err != nil {
		return err
	}
	// Parameters change under later updates, so each piece is a copy, in a
	// pooled buffer that emit owns (gRPC frees it once written).
	pool := mem.DefaultBufferPool()
	return gridPieces(int(h.offset), int(h.length), int(h.chunk), func(lo, hi int) error {
		b := pool.Get(hi - lo)
		p.mu.Lock()
		copy(*b, p.pb[lo:hi])
		p.mu.Unlock()
		return emit(lo, b)
	})
}
