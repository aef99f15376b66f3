package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
)

// Comm is a communicator as the C interface hands it out: a
// collective.Comm, the operations issued on it in order, and, on the
// world's rank 0 with DISTBENCH_OUT set, their records.
type Comm struct {
	comm     collective.Comm
	settings Settings
	world    *world // shared by a communicator and its groups
	ranks    []int  // global ranks of a group's members; nil for the world

	mu     sync.Mutex
	queue  chan *Op // ops in issue order, completed by track
	closed bool
	step   int64
	wg     sync.WaitGroup
}

// world is what a communicator and its groups share: the rendezvous
// session and the recorder.
type world struct {
	sess *rendezvous.Session
	rec  *recorder // nil unless this process records
}

// Op is one operation in flight.
type Op struct {
	Collective string
	Bytes      int64
	Count      int64
	DType      collective.DType
	Reduce     collective.Op // 0 where none
	Root       int
	Step       int64

	work   collective.Work
	issued time.Time
	done   chan struct{}
	err    error
	busyUs float64 // how long the communicator spent on it
	ended  time.Time
}

// Wait waits until the operation completes or ctx ends; it returns the
// operation's error, or ctx's error where ctx ended first (the operation
// goes on, bounded by its own deadline).
func (o *Op) Wait(ctx context.Context) error {
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed when the operation has completed.
func (o *Op) Done() <-chan struct{} { return o.done }

// Open joins the job the environment describes and builds its
// communicator: the rendezvous (through torch's TCPStore under torchrun),
// the transport mesh, the strategy. Settings are checked first, so a bad
// strategy or option fails before anything touches the network.
func Open(ctx context.Context, getenv func(string) string) (*Comm, error) {
	s, err := SettingsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return OpenSettings(ctx, s, getenv)
}

// OpenSettings is Open with settings already read.
func OpenSettings(ctx context.Context, s Settings, getenv func(string) string) (*Comm, error) {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = collective.DefaultTimeout
	}
	joinTimeout := max(timeout, time.Minute)
	sess, err := rendezvous.Join(ctx, rendezvous.Options{
		URL: s.URL, Rank: s.Rank, Size: s.Size, Timeout: joinTimeout,
		JobID: s.JobID, Token: s.Token, Torch: s.Torch, Getenv: getenv,
	})
	if err != nil {
		return nil, err
	}
	store := jobStore{prefix: "job/" + s.JobID + "/", st: sess.Store()}
	var link *linkspec.Link
	if s.Link != "" {
		rl, err := linkspec.ParseRankLinks(s.Link)
		if err != nil {
			sess.Close()
			return nil, err
		}
		if l := rl.For(sess.Rank()); l != (linkspec.Link{}) {
			link = &l
		}
	}
	var tr *transport.TCP
	if sess.Size() > 1 {
		tr, err = transport.NewTCP(ctx, transport.TCPOptions{
			Rank: sess.Rank(), Size: sess.Size(), Store: store, JobID: s.JobID, Token: s.Token,
			ListenHost: s.ListenHost, ConnectTimeout: joinTimeout, Link: link, Spin: s.Spin,
			Transport: s.Transport,
		})
		if err != nil {
			sess.Close()
			return nil, err
		}
	}
	cfg := collective.Config{
		Rank: sess.Rank(), Size: sess.Size(), Store: store,
		Timeout: s.Timeout, Options: s.Options, JobID: s.JobID, Token: s.Token,
	}
	if tr != nil {
		cfg.Transport = tr
	}
	comm, err := collective.New(ctx, s.Strategy, cfg)
	if err != nil {
		if tr != nil {
			tr.Close()
		}
		sess.Close()
		return nil, err
	}
	w := &world{sess: sess}
	if s.Out != "" && sess.Rank() == 0 {
		if w.rec, err = newRecorder(s, sess.Size()); err != nil {
			comm.Close()
			sess.Close()
			return nil, err
		}
	}
	return newComm(comm, s, w, nil), nil
}

func newComm(comm collective.Comm, s Settings, w *world, ranks []int) *Comm {
	c := &Comm{comm: comm, settings: s, world: w, ranks: ranks, queue: make(chan *Op, 1024)}
	c.wg.Add(1)
	go c.track()
	return c
}

// Rank and Size are this process's rank in the communicator and its size.
func (c *Comm) Rank() int { return c.comm.Rank() }
func (c *Comm) Size() int { return c.comm.Size() }

// Strategy is the strategy's registered name.
func (c *Comm) Strategy() string { return c.comm.Strategy() }

// SetStep labels the operations issued from now on as step n's: the
// caller's training step, which records carry.
func (c *Comm) SetStep(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n != c.step && c.world.rec != nil && c.ranks == nil {
		c.world.rec.endStep(c.step, time.Now())
	}
	c.step = n
}

// Group returns a communicator over ranks of this one (see
// collective.Comm.NewGroup).
func (c *Comm) Group(ranks []int) (*Comm, error) {
	g, err := c.comm.NewGroup(ranks)
	if err != nil {
		return nil, err
	}
	global := make([]int, len(ranks))
	for i, r := range ranks {
		global[i] = r
		if c.ranks != nil {
			global[i] = c.ranks[r]
		}
	}
	return newComm(g, c.settings, c.world, global), nil
}

// errClosed is what operations issued after Close get.
var errClosed = fmt.Errorf("distbench: communicator closed: %w", collective.ErrClosed)

// Issue starts op with start, which calls one of the communicator's
// I-forms, and returns it at once. Operations complete in issue order.
func (c *Comm) Issue(op *Op, start func(ctx context.Context, cc collective.Comm) collective.Work) *Op {
	op.done = make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		op.err = errClosed
		close(op.done)
		return op
	}
	op.Step = c.step
	op.issued = time.Now()
	op.work = start(context.Background(), c.comm)
	// track drains the queue; a full queue (over a thousand operations
	// in flight) makes the issuer wait, as a bounded work queue should.
	c.queue <- op
	return op
}

// track completes operations in issue order, measuring how long the
// communicator spent on each: from when it was issued, or when the one
// before it completed if later, to its completion.
func (c *Comm) track() {
	defer c.wg.Done()
	var prevEnd time.Time
	for op := range c.queue {
		op.err = op.work.Wait(context.Background())
		op.ended = time.Now()
		begin := op.issued
		if prevEnd.After(begin) {
			begin = prevEnd
		}
		prevEnd = op.ended
		op.busyUs = float64(op.ended.Sub(begin)) / float64(time.Microsecond)
		// Recorded before the caller hears of it, so that a step the
		// caller ends after waiting counts this operation.
		if rec := c.world.rec; rec != nil {
			rec.add(c, op)
		}
		close(op.done)
	}
}

// Close waits for the operations in flight, closes the communicator and,
// for the world, the rendezvous session; the records are written and
// summarised.
func (c *Comm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.queue)
	c.mu.Unlock()
	c.wg.Wait()
	var err error
	if cw, ok := c.comm.(collective.CloseWaiter); ok && c.ranks == nil {
		ctx, cancel := context.WithTimeout(context.Background(), max(c.settings.Timeout, time.Minute))
		err = cw.CloseAndWait(ctx)
		cancel()
	} else {
		err = c.comm.Close()
	}
	if c.ranks == nil {
		if rec := c.world.rec; rec != nil {
			c.mu.Lock()
			rec.endStep(c.step, time.Now())
			c.mu.Unlock()
			err = errors.Join(err, rec.close())
		}
		err = errors.Join(err, c.world.sess.Close())
	}
	return err
}

// recorded is how a record names an operation's communicator.
func (c *Comm) np() int { return c.comm.Size() }

// BusyUs is how long the communicator spent on the operation, in µs: from
// its issue, or the completion of the one before it if later, to its own
// completion. Valid once it is done.
func (o *Op) BusyUs() float64 { return o.busyUs }
