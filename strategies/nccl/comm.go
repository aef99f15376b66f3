//go:build cgo

package nccl

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/cuda"
)

// world is what the communicators of one job share on this rank.
type world struct {
	cfg  collective.Config
	ctx  context.Context // the world's construction; later groups use Background
	dev  int
	wseq int64 // this world's number among the worlds this rank made, from the store

	mu    sync.Mutex
	made  map[string]int // groups made per member list, for their id keys
	comms []*ncomm
}

// top is the world communicator: closing it destroys every NCCL
// communicator its groups made.
type top struct {
	*core.Group
	w *world
}

func (t *top) Close() error {
	err := t.Group.Close()
	t.w.close()
	return err
}

func newComm(ctx context.Context, cfg collective.Config) (collective.Comm, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, err := deviceCount()
	if err != nil {
		return nil, err
	}
	// The GPU follows the launcher's local rank (cuda.Place), as
	// --device cuda's buffers do.
	w := &world{cfg: cfg, ctx: ctx, dev: cuda.Place(cfg.Rank, n, os.Getenv).Ordinal, made: map[string]int{}}
	if cfg.Store != nil && cfg.Size > 1 {
		sctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout())
		w.wseq, err = cfg.Store.Add(sctx, fmt.Sprintf("nccl/worlds/%d", cfg.Rank), 1)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s: rendezvous store: %w", Name, err)
		}
	}
	g, err := core.New(Name, cfg, w.factory)
	if err != nil {
		w.close()
		return nil, err
	}
	w.ctx = context.Background()
	return &top{Group: g, w: w}, nil
}

// factory makes a group's NCCL communicator. Groups of one rank never reach
// their algorithms (the engine copies), so they get none.
func (w *world) factory(g *core.Group) (core.Algorithms, error) {
	if g.Size() == 1 {
		return &algorithms{}, nil
	}
	ranks := make([]int, g.Size())
	for i := range ranks {
		ranks[i] = g.GlobalRank(i)
	}
	w.mu.Lock()
	key := fmt.Sprint(ranks)
	name := fmt.Sprintf("%s#%d", key, w.made[key])
	w.made[key]++
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.OpTimeout())
	defer cancel()
	id, err := w.shareID(ctx, g, name)
	if err != nil {
		return nil, fmt.Errorf("%s: group %v: unique id: %w", Name, ranks, err)
	}
	c, err := w.open(ctx, g, id)
	if err != nil {
		return nil, fmt.Errorf("%s: group %v: init: %w", Name, ranks, err)
	}
	return &algorithms{c: c}, nil
}

// shareID has group rank 0 make the unique id and the others receive it,
// through the rendezvous store where the job has one, else the transport.
func (w *world) shareID(ctx context.Context, g *core.Group, name string) ([128]byte, error) {
	var id [128]byte
	if g.Rank() == 0 {
		var rc int
		if id, rc = uniqueID(); rc != ncclSuccess {
			return id, fmt.Errorf("ncclGetUniqueId: %s", ncclErr(rc, 0))
		}
	}
	if st := w.cfg.Store; st != nil {
		key := fmt.Sprintf("nccl/uid/%d/%s", w.wseq, name)
		if g.Rank() == 0 {
			return id, st.Set(ctx, key, id[:])
		}
		v, err := st.Get(ctx, key)
		if err == nil && len(v) != len(id) {
			err = fmt.Errorf("store key %s holds %d bytes, not %d", key, len(v), len(id))
		}
		copy(id[:], v)
		return id, err
	}
	tr := g.Transport()
	tag := uidTag(name)
	if g.Rank() == 0 {
		for r := 1; r < g.Size(); r++ {
			if err := tr.Send(ctx, g.GlobalRank(r), tag, id[:]); err != nil {
				return id, err
			}
		}
		return id, nil
	}
	return id, tr.Recv(ctx, g.GlobalRank(0), tag, id[:])
}

// uidTag is the transport tag of a group's unique id: the top two bits set,
// which the engine's collective tags (top bit clear) and point-to-point tags
// (top bit set, bits 56-62 clear) never have.
func uidTag(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return 3<<62 | h.Sum64()&(1<<40-1)
}

func (w *world) open(ctx context.Context, g *core.Group, id [128]byte) (*ncomm, error) {
	c := &ncomm{dev: w.dev, global: w.cfg.Rank}
	h, rc := commInit(w.dev, g.Size(), id, g.Rank())
	if rc < 0 {
		return nil, fmt.Errorf("rank %d: cudaSetDevice(%d): %s", c.global, w.dev, cudaErr(-rc))
	}
	if rc != ncclSuccess && rc != ncclInProgress {
		return nil, fmt.Errorf("rank %d: ncclCommInitRankConfig: %s", c.global, ncclErr(rc, h))
	}
	c.h = h
	s, crc := streamCreate(w.dev)
	if crc != cudaSuccess {
		commAbort(h)
		return nil, fmt.Errorf("rank %d: cudaStreamCreate: %s", c.global, cudaErr(crc))
	}
	c.stream = s
	w.mu.Lock()
	w.comms = append(w.comms, c)
	w.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.wait(ctx, "communicator initialisation"); err != nil {
		return nil, err
	}
	return c, nil
}

// close destroys the world's communicators; once one has failed it aborts
// the others instead, since destroying one whose peers are gone may wait
// for them.
func (w *world) close() {
	w.mu.Lock()
	comms := w.comms
	w.comms = nil
	w.mu.Unlock()
	failed := false
	for _, c := range comms {
		c.mu.Lock()
		failed = failed || c.dead != nil
		c.mu.Unlock()
	}
	for _, c := range comms {
		if failed {
			c.mu.Lock()
			if !c.closed {
				c.abort(errAborted)
			}
			c.mu.Unlock()
		}
		c.close()
	}
}

// ncomm is one NCCL communicator with its stream and staging buffers.
type ncomm struct {
	h, stream   uintptr
	dev, global int

	// mu is held by the operation in progress and by close, so that a
	// communicator is never destroyed under a call (Close may come from
	// another goroutine while an asynchronous operation runs).
	mu     sync.Mutex
	buf    [2]devBuf
	dead   error // set once aborted; the handle is then gone
	closed bool
}

// hold locks the communicator for one operation; defer what it returns.
func (c *ncomm) hold() func() {
	c.mu.Lock()
	return c.mu.Unlock
}

type devBuf struct {
	p uintptr
	n int
}

func (c *ncomm) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for i := range c.buf {
		if c.buf[i].p != 0 {
			devFree(c.dev, c.buf[i].p)
			c.buf[i] = devBuf{}
		}
	}
	if c.dead == nil && c.h != 0 {
		commDestroy(c.h)
		streamDestroy(c.dev, c.stream)
	}
	c.h = 0
}

// abort ends the communicator after err, which it returns.
func (c *ncomm) abort(err error) error {
	if c.dead == nil {
		commAbort(c.h)
		c.dead = err
	}
	return err
}

// wait polls the communicator's asynchronous error and its stream until
// the work issued on them is done, an error shows, or ctx ends; on error or
// timeout it aborts the communicator, so that nothing waits on it for ever.
func (c *ncomm) wait(ctx context.Context, what string) error {
	start := time.Now()
	launched := false // the call has left ncclInProgress: its work is on the stream
	for {
		// Until the call is launched, the stream may be empty only because
		// its work is not on it yet. After, the stream first and the error
		// second: an error raised before the stream drained is never missed.
		q := cudaErrorNotReady
		if launched {
			q = streamQuery(c.dev, c.stream)
		}
		switch st := asyncError(c.h); st {
		case ncclSuccess:
			if !launched {
				launched = true
				continue
			}
			if q == cudaSuccess {
				return nil
			}
			if q != cudaErrorNotReady {
				return c.abort(fmt.Errorf("rank %d: cudaStreamQuery: %s; communicator aborted", c.global, cudaErr(q)))
			}
		case ncclInProgress:
		default:
			return c.abort(fmt.Errorf("rank %d: NCCL reported %s; communicator aborted", c.global, ncclErr(st, c.h)))
		}
		if ctx.Err() != nil {
			return c.abort(fmt.Errorf("rank %d: %w; communicator aborted", c.global,
				&collective.TimeoutError{After: time.Since(start), Waiting: "NCCL " + what + " to complete (ncclCommGetAsyncError, cudaStreamQuery)"}))
		}
		pause(time.Since(start))
	}
}

// pause backs off between polls: yield for the first millisecond of a wait
// (a small collective's whole time on a GPU: a sleep costs about a
// millisecond however short it is asked to be, measured here on Linux with
// Go 1.26), then sleep an eighth of the time waited so far, at most 1ms, so
// that a long wait costs little CPU and overshoots its end by little.
func pause(waited time.Duration) {
	if waited < time.Millisecond {
		runtime.Gosched()
		return
	}
	time.Sleep(min(waited/8, time.Millisecond))
}

var errAborted = errors.New("the communicator was aborted by an earlier failure")

// staged returns device buffer i with at least n bytes.
func (c *ncomm) staged(i, n int) (uintptr, error) {
	if c.closed {
		return 0, collective.ErrClosed
	}
	if c.dead != nil {
		return 0, fmt.Errorf("rank %d: %w: %v", c.global, errAborted, c.dead)
	}
	b := &c.buf[i]
	if b.p != 0 && b.n >= n {
		return b.p, nil
	}
	if b.p != 0 {
		devFree(c.dev, b.p)
		*b = devBuf{}
	}
	p, rc := devMalloc(c.dev, max(n, 256))
	if rc != cudaSuccess {
		return 0, fmt.Errorf("rank %d: cudaMalloc(%d): %s", c.global, n, cudaErr(rc))
	}
	*b = devBuf{p, max(n, 256)}
	return p, nil
}

// upload copies data into device buffer i.
func (c *ncomm) upload(i int, data []byte) (uintptr, error) {
	p, err := c.staged(i, len(data))
	if err != nil {
		return 0, err
	}
	if rc := toDevice(c.dev, p, data); rc != cudaSuccess {
		return 0, fmt.Errorf("rank %d: cudaMemcpy to the device: %s", c.global, cudaErr(rc))
	}
	return p, nil
}

func (c *ncomm) download(dst []byte, src uintptr) error {
	if rc := toHost(c.dev, dst, src); rc != cudaSuccess {
		return fmt.Errorf("rank %d: cudaMemcpy to the host: %s", c.global, cudaErr(rc))
	}
	return nil
}

// issued checks what an NCCL call returned and waits for its completion.
func (c *ncomm) issued(ctx context.Context, what string, rc int) error {
	switch {
	case rc < 0:
		return fmt.Errorf("rank %d: %s: cudaSetDevice: %s", c.global, what, cudaErr(-rc))
	case rc != ncclSuccess && rc != ncclInProgress:
		return c.abort(fmt.Errorf("rank %d: NCCL %s returned %s; communicator aborted", c.global, what, ncclErr(rc, c.h)))
	}
	return c.wait(ctx, what)
}
