package core

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/kernels"
)

// Schedule is one rank's part of a chunked, pipelined collective, compiled
// ahead of running: sends, receives (copied into place or reduced into it)
// and local reductions, each after the steps it names. The ring's passes and
// chains and the trees' flows are all schedules; Call.Run executes them.
//
// Steps on one stream (peer and channel) keep the order they were added in:
// a send goes out only after the stream's previous send, a receive is posted
// only after the stream's previous receive, so that both ends agree which
// message is which. Across streams a step runs as soon as the steps it
// names are done: a send or a reduction once they have completed, a
// receive is posted once they have (a receive that names none is posted
// before the first send), and it completes when its message is in.
type Schedule struct {
	// DType and Op are those of RecvReduce and Reduce steps.
	DType collective.DType
	Op    collective.Op
	// Where, when set, says where in the collective step s is, for errors
	// ("step 2 of 6", "tree 0 up, chunk 3 of 8").
	Where func(s Step) string

	steps   []step
	deps    []Step
	streams []stream
	pooled  bool // from Call.Schedule: Run recycles it
}

// schedules recycles the storage of schedules that Call.Schedule made.
var schedules = sync.Pool{New: func() any { return new(Schedule) }}

// Schedule returns an empty schedule of reductions in dt with op, whose
// storage Run recycles: build it, run it once, and leave it after Run.
// (A Schedule literal works too; its storage is left to the collector.)
func (c *Call) Schedule(dt collective.DType, op collective.Op) *Schedule {
	s := schedules.Get().(*Schedule)
	s.DType, s.Op, s.pooled = dt, op, true
	return s
}

// recycle returns s to schedules, holding no buffer of the operation.
func (s *Schedule) recycle() {
	clear(s.steps[:cap(s.steps)])
	s.steps, s.deps, s.streams = s.steps[:0], s.deps[:0], s.streams[:0]
	s.Where, s.pooled = nil, false
	schedules.Put(s)
}

// Step is a step of a Schedule, as its builder methods return it.
type Step int32

// None stands for no step: a dependency on None is no dependency.
const None Step = -1

type stepKind uint8

const (
	sendStep       stepKind = iota // send buf
	recvStep                       // receive into buf
	recvReduceStep                 // receive and reduce into buf
	reduceStep                     // buf = buf op src, locally
)

type step struct {
	kind       stepKind
	channel    uint8
	peer       int
	stream     int32 // index in Schedule.streams; −1 for a reduction
	dep0, dep1 int32 // its dependencies are deps[dep0:dep1]
	prev       Step  // the previous send, or receive, of its stream
	buf, src   []byte
}

// stream is the message stream with one peer on one channel.
type stream struct {
	peer               int
	channel            uint8
	lastSend, lastRecv Step
}

// Send adds a send of data to group rank peer on channel, after the steps
// in after.
func (s *Schedule) Send(peer int, channel uint8, data []byte, after ...Step) Step {
	return s.add(step{kind: sendStep, channel: channel, peer: peer, buf: data}, after)
}

// Recv adds a receive of the next message from group rank peer on channel
// into buf.
func (s *Schedule) Recv(peer int, channel uint8, buf []byte, after ...Step) Step {
	return s.add(step{kind: recvStep, channel: channel, peer: peer, buf: buf}, after)
}

// RecvReduce adds a receive that reduces the next message from group rank
// peer on channel into buf as it is read (buf = buf op message).
func (s *Schedule) RecvReduce(peer int, channel uint8, buf []byte, after ...Step) Step {
	return s.add(step{kind: recvReduceStep, channel: channel, peer: peer, buf: buf}, after)
}

// Reduce adds a local reduction, dst = dst op src.
func (s *Schedule) Reduce(dst, src []byte, after ...Step) Step {
	return s.add(step{kind: reduceStep, peer: -1, stream: -1, prev: None, buf: dst, src: src}, after)
}

// Len is the number of steps.
func (s *Schedule) Len() int { return len(s.steps) }

func (s *Schedule) add(st step, after []Step) Step {
	id := Step(len(s.steps))
	st.dep0 = int32(len(s.deps))
	for _, d := range after {
		if d != None {
			s.deps = append(s.deps, d)
		}
	}
	st.dep1 = int32(len(s.deps))
	if st.kind != reduceStep {
		st.stream = s.streamOf(st.peer, st.channel)
		str := &s.streams[st.stream]
		if st.kind == sendStep {
			st.prev, str.lastSend = str.lastSend, id
		} else {
			st.prev, str.lastRecv = str.lastRecv, id
		}
	}
	s.steps = append(s.steps, st)
	return id
}

// streamOf returns the index of the stream with peer on channel, adding it.
// A schedule has a few streams, so a linear search beats a map.
func (s *Schedule) streamOf(peer int, channel uint8) int32 {
	for i, str := range s.streams {
		if str.peer == peer && str.channel == channel {
			return int32(i)
		}
	}
	s.streams = append(s.streams, stream{peer: peer, channel: channel, lastSend: None, lastRecv: None})
	return int32(len(s.streams) - 1)
}

// run is the state of one execution of a Schedule.
type run struct {
	c *Call
	s *Schedule

	waiting []int32 // per step: dependencies not yet done; −1 once started
	next    []Step  // per step: the next step of its kind on its stream
	succ    []Step  // steps that depend on step i: succ[succAt[i]:succAt[i+1]]
	succAt  []int32
	posted  []driver.Posted // per receive step, once posted
	ready   []Step          // sends and reductions ready to run, FIFO
	head    []Step          // per stream: its first receive not yet done
	done    int

	cases []reflect.SelectCase // for waitAny, made on first use
	heads []Step
	ints  []int32 // backs waiting and succAt
	fill  []int32
}

// runs recycles the execution state of schedules: a pipelined collective
// runs one per operation, and at a few kilobytes its bookkeeping's
// allocations would cost about what its messages do.
var runs = sync.Pool{New: func() any { return new(run) }}

// recycle returns r to runs, holding no references to the operation's
// buffers, transport or channels.
func (r *run) recycle() {
	clear(r.posted[:cap(r.posted)])
	clear(r.cases[:cap(r.cases)])
	r.cases = r.cases[:0]
	r.c, r.s = nil, nil
	runs.Put(r)
}

// resize returns b with length n, reusing its array when it is big enough.
func resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// Run executes s: it posts every receive that depends on nothing, then runs
// each step as soon as the steps it depends on are done, sends in its own
// goroutine one after another and receiving on the transport's reader, and
// blocks only when nothing is ready, until the next receive completes. It
// returns the first error; the receives still posted are withdrawn first,
// so that no buffer changes after Run returns.
func (c *Call) Run(s *Schedule) error {
	if s.pooled {
		defer s.recycle()
	}
	n := len(s.steps)
	if n == 0 {
		return nil
	}
	r := runs.Get().(*run)
	defer r.recycle()
	r.c, r.s, r.done = c, s, 0
	r.ints = resize(r.ints, 2*n+1)
	clear(r.ints)
	r.waiting, r.succAt = r.ints[:n], r.ints[n:]
	r.next = resize(r.next, n)
	r.posted = resize(r.posted, n)
	// Count every step's dependencies and its dependents (succAt, shifted
	// by one, then summed into offsets).
	for i := range s.steps {
		st := &s.steps[i]
		r.next[i] = None
		r.waiting[i] = st.dep1 - st.dep0
		for _, d := range s.deps[st.dep0:st.dep1] {
			r.succAt[d+1]++
		}
		if st.prev != None {
			r.waiting[i]++
			r.next[st.prev] = Step(i)
		}
	}
	for i := range n {
		r.succAt[i+1] += r.succAt[i]
	}
	r.succ = resize(r.succ, int(r.succAt[n]))
	r.fill = resize(r.fill, n)
	copy(r.fill, r.succAt[:n])
	for i := range s.steps {
		st := &s.steps[i]
		for _, d := range s.deps[st.dep0:st.dep1] {
			r.succ[r.fill[d]] = Step(i)
			r.fill[d]++
		}
	}
	r.head = resize(r.head, len(s.streams))
	for i := range r.head {
		r.head[i] = None
	}
	for i := n - 1; i >= 0; i-- { // each stream's first receive
		if k := s.steps[i].kind; k == recvStep || k == recvReduceStep {
			r.head[s.steps[i].stream] = Step(i)
		}
	}
	r.ready = r.ready[:0]
	// Post the receives that wait for nothing, before any send.
	for i := range s.steps {
		if r.waiting[i] == 0 {
			r.start(Step(i))
		}
	}
	err := r.loop()
	if err != nil {
		r.withdraw()
	}
	return err
}

// start runs a step whose dependencies are done: a receive is posted (and
// the receives after it on its stream, as far as they are free to be), the
// others are queued.
func (r *run) start(i Step) {
	for i != None {
		r.waiting[i] = -1 // started: the loop in Run must not start it again
		st := &r.s.steps[i]
		if st.kind != recvStep && st.kind != recvReduceStep {
			r.ready = append(r.ready, i)
			return
		}
		g := r.c.g
		var p driver.Posted
		var err error
		if st.kind == recvStep {
			p, err = g.shared.tr.PostRecv(g.ranks[st.peer], r.c.tag(st.channel), st.buf)
		} else {
			p, err = g.shared.tr.PostRecvReduce(g.ranks[st.peer], r.c.tag(st.channel), st.buf, kernels.Reduction(r.s.DType, r.s.Op))
		}
		if err != nil {
			p = unposted{err}
		}
		r.posted[i] = p
		// The next receive of the stream may now be posted, unless it
		// waits for more.
		i = r.next[i]
		if i != None {
			if r.waiting[i]--; r.waiting[i] != 0 {
				return
			}
		}
	}
}

// finish marks step i done and starts the steps that were waiting for it.
func (r *run) finish(i Step) {
	r.done++
	st := &r.s.steps[i]
	if st.kind == sendStep {
		if j := r.next[i]; j != None {
			r.release(j)
		}
	}
	for _, j := range r.succ[r.succAt[i]:r.succAt[i+1]] {
		r.release(j)
	}
}

func (r *run) release(j Step) {
	if r.waiting[j]--; r.waiting[j] == 0 {
		r.start(j)
	}
}

func (r *run) loop() error {
	s, c := r.s, r.c
	for qi := 0; r.done < len(s.steps); {
		if qi < len(r.ready) {
			i := r.ready[qi]
			qi++
			st := &s.steps[i]
			if st.kind == sendStep {
				if err := c.Send(st.peer, st.channel, st.buf); err != nil {
					return r.where(i, err)
				}
			} else {
				kernels.Reduce(s.DType, s.Op, st.buf, st.src)
			}
			r.finish(i)
			continue
		}
		i, err := r.waitAny()
		if err != nil {
			return err
		}
		r.finish(i)
	}
	return nil
}

// waitAny waits for the first of the streams' next receives to complete,
// and returns it. With a single stream to wait on (a ring, a chain), it is
// one Wait.
func (r *run) waitAny() (Step, error) {
	r.heads = r.heads[:0]
	for _, i := range r.head {
		if i != None && r.posted[i] != nil {
			r.heads = append(r.heads, i)
		}
	}
	switch len(r.heads) {
	case 0:
		return None, fmt.Errorf("schedule stalled: %d of %d steps done, none ready and no receive posted", r.done, len(r.s.steps))
	case 1:
		return r.wait(r.heads[0])
	}
	for _, i := range r.heads {
		select {
		case <-r.posted[i].Done():
			return r.wait(i)
		default:
		}
	}
	ctx := r.c.ctx
	switch h := r.heads; len(h) { // the usual cases, without reflection
	case 2:
		select {
		case <-r.posted[h[0]].Done():
			return r.wait(h[0])
		case <-r.posted[h[1]].Done():
			return r.wait(h[1])
		case <-ctx.Done():
			return r.wait(h[0])
		}
	case 3:
		select {
		case <-r.posted[h[0]].Done():
			return r.wait(h[0])
		case <-r.posted[h[1]].Done():
			return r.wait(h[1])
		case <-r.posted[h[2]].Done():
			return r.wait(h[2])
		case <-ctx.Done():
			return r.wait(h[0])
		}
	}
	r.cases = r.cases[:0]
	for _, i := range r.heads {
		r.cases = append(r.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.posted[i].Done())})
	}
	r.cases = append(r.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	k, _, _ := reflect.Select(r.cases)
	if k < len(r.heads) {
		return r.wait(r.heads[k])
	}
	// The operation ended: the first receive waited for says how.
	return r.wait(r.heads[0])
}

// wait completes receive i and advances its stream.
func (r *run) wait(i Step) (Step, error) {
	st := &r.s.steps[i]
	p := r.posted[i]
	r.posted[i] = nil
	err := p.Wait(r.c.ctx)
	r.head[st.stream] = r.next[i]
	if err != nil {
		g := r.c.g
		return i, r.where(i, g.peerErr(st.peer, fmt.Errorf("recv: %w", r.c.explain(st.peer, err))))
	}
	return i, nil
}

func (r *run) where(i Step, err error) error {
	if r.s.Where == nil {
		return err
	}
	return fmt.Errorf("%s: %w", r.s.Where(i), err)
}

// withdraw cancels every receive still posted, so that its buffer is not
// written after Run returns.
func (r *run) withdraw() {
	for i, p := range r.posted {
		if p != nil {
			p.Wait(cancelled)
			r.posted[i] = nil
		}
	}
}

// unposted is a receive that could not be posted.
type unposted struct{ err error }

func (f unposted) Wait(context.Context) error { return f.err }
func (f unposted) Done() <-chan struct{}      { return closed }

var closed = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()
