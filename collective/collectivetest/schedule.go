package collectivetest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// ScheduleWorld is an in-memory transport world that moves messages only when
// its driver says so and records them, so that a test can print the schedule
// a strategy's algorithm follows (who sends what to whom, step by step) and
// compare it with a golden file (internal/golden).
//
// The recording is deterministic. It runs in a testing/synctest bubble, where
// synctest.Wait tells when every rank is blocked, and [ScheduleWorld.Drive]
// moves messages only then, one step at a time, in a fixed order. The model
// is synchronous: a message sent during step s is transferred in step s+1 at
// the earliest, and each directed link carries one message per step (the
// oldest first, then the lowest tag), so a rank that has several chunks for
// one peer sends them in successive steps, as a link of finite bandwidth
// would.
//
// [ScheduleWorld.Format] names the elements a message carries from its bytes,
// so the tensors must be float32 and every element must hold its own index
// plus one. With the operation max (or a broadcast), every partial result
// does too, and a message reads as x[a:b].
//
// Typical use, inside synctest.Test:
//
//	w := collectivetest.NewScheduleWorld(n)
//	... build comms[r] on w.Transport(r) ...
//	w.Run(t, comms, func(r int, c collective.Comm) error { return c.AllReduce(t.Context(), x[r], collective.Max) })
//	golden.Check(t, "testdata/allreduce.txt", []byte(w.Format()), *update)
type ScheduleWorld struct {
	ranks []*scheduleTransport

	mu     sync.Mutex
	step   int
	queued map[[2]int][]scheduleMsg        // per directed link (src, dst), in send order
	boxes  map[scheduleKey][][]byte        // delivered before their receive was posted
	posted map[scheduleKey][]*schedulePost // posted before their message was delivered
	log    []scheduleMsg
	failed error
	// closing: the operation is over and the communicators close; what
	// they send is moved, not logged.
	closing bool
	hosts   []string // per rank, set by SetHosts; nil: not known
}

type scheduleKey struct {
	dst, src int
	tag      uint64
}

type scheduleMsg struct {
	src, dst   int
	tag        uint64
	data       []byte
	sent, step int // the step it was sent in, and transferred in
}

// NewScheduleWorld returns a world of n ranks.
func NewScheduleWorld(n int) *ScheduleWorld {
	w := &ScheduleWorld{
		queued: map[[2]int][]scheduleMsg{},
		boxes:  map[scheduleKey][][]byte{},
		posted: map[scheduleKey][]*schedulePost{},
	}
	for r := range n {
		w.ranks = append(w.ranks, &scheduleTransport{w: w, rank: r})
	}
	return w
}

// SetHosts names each rank's host (hosts[r] for rank r), so that the
// transports say which ranks share one (driver.Topology) and a
// hierarchical algorithm runs as it would across hosts. Without it they
// say nothing, and such an algorithm runs flat. Call it before the
// communicators are built.
func (w *ScheduleWorld) SetHosts(hosts []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hosts = slices.Clone(hosts)
}

// Transport returns rank's end of the world.
func (w *ScheduleWorld) Transport(rank int) driver.Transport { return w.ranks[rank] }

// Run calls op on every rank at once, each with its own communicator (comms[r]
// for rank r), calls Drive, waits for every op to return and closes the
// communicators, still moving messages: a communicator may talk while it
// closes (a parameter server's workers say goodbye to its servers over the
// transport), and one that serves other ranks (collective.CloseWaiter) is
// waited for until it has stopped, so that none of its goroutines outlives
// the bubble. What the closes send is moved but not recorded: the schedule
// is the operation's. It fails t with the first rank's error. It must be
// called inside a synctest bubble, with that bubble's t.
func (w *ScheduleWorld) Run(t testing.TB, comms []collective.Comm, op func(rank int, c collective.Comm) error) {
	t.Helper()
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { errs[r] = op(r, c) })
	}
	w.Drive()
	wg.Wait()
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		var cw sync.WaitGroup
		for _, c := range comms {
			cw.Go(func() {
				if s, ok := c.(collective.CloseWaiter); ok {
					s.CloseAndWait(t.Context())
				} else {
					c.Close()
				}
			})
		}
		cw.Wait()
	}()
	// The bubble's clock: a close that hangs fails the test in no real time.
	giveUp := time.Now().Add(time.Hour)
	for {
		w.Drive()
		if time.Now().After(giveUp) {
			t.Fatalf("the communicators have not closed after an hour")
		}
		select {
		case <-closed:
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			return
		case <-time.After(time.Second):
			// Nothing to move, and a close still waits on a timer: the
			// bubble's clock moves on while this goroutine sleeps.
		}
	}
}

// Drive moves messages until none is left to move: each time every rank is
// blocked, every link with messages queued transfers its oldest one. It must
// be called inside a synctest bubble, while the ranks run in goroutines of
// that bubble.
func (w *ScheduleWorld) Drive() {
	for {
		synctest.Wait()
		w.mu.Lock()
		links := make([][2]int, 0, len(w.queued))
		for l, q := range w.queued {
			if len(q) > 0 {
				links = append(links, l)
			}
		}
		if len(links) == 0 {
			w.mu.Unlock()
			return
		}
		w.step++
		slices.SortFunc(links, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		for _, l := range links {
			q := w.queued[l]
			i := 0
			for j, m := range q {
				if m.sent < q[i].sent || m.sent == q[i].sent && m.tag < q[i].tag {
					i = j
				}
			}
			m := q[i]
			w.queued[l] = slices.Delete(q, i, i+1)
			m.step = w.step
			if !w.closing {
				w.log = append(w.log, m)
			}
			k := scheduleKey{m.dst, m.src, m.tag}
			if q := w.posted[k]; len(q) > 0 {
				w.posted[k] = q[1:]
				q[0].fill(m.data)
			} else {
				w.boxes[k] = append(w.boxes[k], m.data)
			}
		}
		w.mu.Unlock()
	}
}

// Format writes the messages transferred so far, one line per message,
// grouped by step: source and destination rank, channel (the low byte of the
// tag, as internal/core numbers its channels), the elements carried and the
// size in bytes. A header line explains the columns and a trailer counts the
// steps and messages.
func (w *ScheduleWorld) Format() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b bytes.Buffer
	b.WriteString("# step s: the messages transferred in step s: src -> dst, channel, elements, bytes\n")
	step := 0
	for _, m := range w.log {
		if m.step != step {
			step = m.step
			fmt.Fprintf(&b, "step %d\n", step)
		}
		fmt.Fprintf(&b, "  %d -> %d  ch%d  %-8s %3d B\n", m.src, m.dst, m.tag&0xff, elements(m.data), len(m.data))
	}
	fmt.Fprintf(&b, "# %d steps, %d messages\n", step, len(w.log))
	return b.String()
}

// elements names the elements a message carries from their values (index+1).
func elements(data []byte) string {
	x := collective.Tensor{DType: collective.Float32, Data: data}
	if x.Count() == 0 {
		return "x[]"
	}
	first := int(x.Float64At(0)) - 1
	for i := range x.Count() {
		if int(x.Float64At(i))-1 != first+i {
			return fmt.Sprintf("x?%v", x.Float32s()) // not a contiguous range: show the values
		}
	}
	return fmt.Sprintf("x[%d:%d]", first, first+x.Count())
}

// scheduleTransport is one rank's end of a ScheduleWorld.
type scheduleTransport struct {
	w    *ScheduleWorld
	rank int
}

var (
	_ driver.Transport = (*scheduleTransport)(nil)
	_ driver.Topology  = (*scheduleTransport)(nil)
)

// HostOf names rank's host as SetHosts did; "" (not known) without it.
func (t *scheduleTransport) HostOf(rank int) string {
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	if rank < len(t.w.hosts) {
		return t.w.hosts[rank]
	}
	return ""
}

func (t *scheduleTransport) Rank() int           { return t.rank }
func (t *scheduleTransport) Size() int           { return len(t.w.ranks) }
func (t *scheduleTransport) PeerAddr(int) string { return "" }
func (t *scheduleTransport) Close() error        { return nil }

func (t *scheduleTransport) Abort(err error) {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = fmt.Errorf("rank %d aborted: %w", t.rank, err)
		for k, q := range w.posted {
			for _, p := range q {
				p.complete(w.failed)
			}
			delete(w.posted, k)
		}
	}
}

func (t *scheduleTransport) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return w.failed
	}
	l := [2]int{t.rank, peer}
	w.queued[l] = append(w.queued[l], scheduleMsg{src: t.rank, dst: peer, tag: tag, data: bytes.Clone(data), sent: w.step})
	return nil
}

func (t *scheduleTransport) Recv(ctx context.Context, peer int, tag uint64, buf []byte) error {
	p, _ := t.PostRecv(peer, tag, buf)
	return p.Wait(ctx)
}

// PostRecv posts a receive that Drive fills when it transfers the message,
// as a production transport's reader fills one when the message arrives.
func (t *scheduleTransport) PostRecv(peer int, tag uint64, buf []byte) (driver.Posted, error) {
	return t.post(&schedulePost{w: t.w, key: scheduleKey{t.rank, peer, tag}, buf: buf, done: make(chan struct{})}), nil
}

// PostRecvReduce posts a receive that Drive reduces the message into.
func (t *scheduleTransport) PostRecvReduce(peer int, tag uint64, buf []byte, red driver.Reduction) (driver.Posted, error) {
	return t.post(&schedulePost{w: t.w, key: scheduleKey{t.rank, peer, tag}, buf: buf, reduce: red.Into, done: make(chan struct{})}), nil
}

func (t *scheduleTransport) post(p *schedulePost) *schedulePost {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if q := w.boxes[p.key]; len(q) > 0 && len(w.posted[p.key]) == 0 {
		w.boxes[p.key] = q[1:]
		p.fill(q[0])
		return p
	}
	if w.failed != nil {
		p.complete(w.failed)
		return p
	}
	w.posted[p.key] = append(w.posted[p.key], p)
	return p
}

// schedulePost is a posted receive of a ScheduleWorld; the world's lock
// guards its completion.
type schedulePost struct {
	w      *ScheduleWorld
	key    scheduleKey
	buf    []byte
	reduce func(dst, src []byte) // nil: a plain receive
	done   chan struct{}
	err    error
}

// fill completes the receive with msg.
func (p *schedulePost) fill(msg []byte) {
	switch {
	case len(msg) != len(p.buf):
		p.complete(&collective.MismatchError{What: "message size in bytes", Want: int64(len(p.buf)), Got: int64(len(msg))})
		return
	case p.reduce != nil:
		p.reduce(p.buf, msg)
	default:
		copy(p.buf, msg)
	}
	p.complete(nil)
}

func (p *schedulePost) complete(err error) {
	p.err = err
	close(p.done)
}

func (p *schedulePost) Done() <-chan struct{} { return p.done }

// Wait waits for the receive; when ctx ends first, the receive is
// withdrawn, so its buffer is not written afterwards.
func (p *schedulePost) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
	}
	w := p.w
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	default:
	}
	q := w.posted[p.key]
	w.posted[p.key] = slices.DeleteFunc(q, func(x *schedulePost) bool { return x == p })
	p.complete(ctx.Err())
	return p.err
}
