package costmodel

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/distbench/distbench/internal/core"
)

// Result is a simulation's outcome.
type Result struct {
	Time     float64   // seconds: until the last rank is done
	Finish   []float64 // per rank, seconds
	Messages int64
	Bytes    int64 // on the wire, all ranks together
}

// Simulate runs prog on topo and returns when every rank is done.
//
// The costs are those of the closed forms, per message: a send occupies its
// sender's egress for α + bβ (sends of a rank go out one at a time, in the
// order they become ready, a stream's in its order, as internal/core's
// executor sends them); the message arrives Latency later; the receiver's
// reader takes it in no faster than bβ after the one before and, for a
// reducing receive, spends bγ reducing it. A local reduction takes bγ of
// its rank's CPU. Between hosts β is multiplied by the number of the
// host's ranks that send (or receive) between hosts at all, which share its
// NIC, and by the spine's oversubscription.
//
// Where every rank sends to one peer (the ring, chains) the order of a
// rank's sends is the schedule's, and Simulate evaluates the event graph
// rank by rank without a global clock: that is what makes 4,096 ranks of
// 2 × 4,095 steps × chunks fit in seconds. Elsewhere it runs a discrete-event
// simulation ordered by time.
func Simulate(prog Program, topo Topology) (Result, error) {
	n := prog.Size()
	if err := topo.Validate(n); err != nil {
		return Result{}, err
	}
	s := newSim(prog, topo)
	if s.singleStream() {
		return s.static()
	}
	return s.events()
}

type sim struct {
	prog Program
	topo Topology
	n    int
	// per rank
	egress, cpu, ingress, finish []float64
	shareOut, shareIn            []float64 // NIC sharers on the rank's host
	msgs, bytes                  int64
	cache                        []costs
}

func newSim(prog Program, topo Topology) *sim {
	n := prog.Size()
	s := &sim{prog: prog, topo: topo, n: n,
		egress: make([]float64, n), cpu: make([]float64, n), ingress: make([]float64, n), finish: make([]float64, n),
		shareOut: make([]float64, n), shareIn: make([]float64, n)}
	if topo.Delay != nil {
		copy(s.egress, topo.Delay)
		copy(s.cpu, topo.Delay)
		copy(s.finish, topo.Delay)
	}
	// How many ranks of each host send, and receive, across hosts.
	hosts := topo.host(n-1) + 1
	out, in := make([]float64, hosts), make([]float64, hosts)
	for r := range n {
		crossOut := false
		for _, q := range prog.Peers(r) {
			if topo.host(q) != topo.host(r) {
				crossOut = true
				in[topo.host(q)]++ // counted once per sender: an upper bound
			}
		}
		if crossOut {
			out[topo.host(r)]++
		}
	}
	for r := range n {
		h := topo.host(r)
		s.shareOut[r], s.shareIn[r] = max(1, out[h]), max(1, min(in[h], float64(topo.PerHost)))
	}
	return s
}

// singleStream reports whether every rank sends to at most one peer.
func (s *sim) singleStream() bool {
	if _, ok := s.prog.(*ringProgram); ok {
		return true
	}
	for r := range s.n {
		if len(s.prog.Peers(r)) > 1 {
			return false
		}
		for _, o := range s.prog.Ops(r) {
			if o.Kind == Send && o.Ch != 0 {
				return false
			}
		}
	}
	return true
}

// link returns the costs of a message from src to dst: α, β and latency
// on the wire, γ at the receiver, and κ, the sender's CPU per byte; α, κ
// and γ before the host's CPU contention (cpu) multiplies them.
func (s *sim) link(src, dst int) (alpha, beta, lat, gamma, kappa float64) {
	t := &s.topo
	p := t.Inter
	hs, hd := t.host(src), t.host(dst)
	if hs == hd {
		p = t.Intra
	}
	alpha, beta, lat, gamma, kappa = p.Alpha, p.Beta, p.Latency, p.Gamma, p.Kappa
	if hs != hd {
		beta *= max(s.shareOut[src], s.shareIn[dst])
		if t.Oversub > 1 {
			beta *= t.Oversub
		}
		if t.SlowNIC >= 0 && (hs == t.SlowNIC || hd == t.SlowNIC) && t.SlowNICFactor > 0 {
			beta *= t.SlowNICFactor
		}
	}
	if src == t.SlowRank && t.SlowRankFactor > 0 {
		alpha *= t.SlowRankFactor
		kappa *= t.SlowRankFactor
	}
	if dst == t.SlowRank && t.SlowRankFactor > 0 {
		gamma *= t.SlowRankFactor
	}
	return alpha, beta, lat, gamma, kappa
}

// costs are a link's, cached per sender: a rank of a ring sends every
// message to one peer, and link is most of a message's work.
type costs struct {
	dst                            int
	alpha, beta, lat, gamma, kappa float64
}

// transfer sends o from src, ready at t, and returns when its receiver
// has it (and has reduced it). The receiver's NIC takes in one message at a
// time (β); its CPU work on the message (κ, and γ for a reducing receive)
// runs on the reader of the message's connection, reader, one per peer as
// the transport's are, so that a server's many connections are read in
// parallel.
func (s *sim) transfer(src, dst int, o *Op, t float64, reader *float64) float64 {
	if s.cache == nil {
		s.cache = make([]costs, s.n)
		for i := range s.cache {
			s.cache[i].dst = -1
		}
	}
	c := &s.cache[src]
	if c.dst != dst {
		c.alpha, c.beta, c.lat, c.gamma, c.kappa = s.link(src, dst)
		c.dst = dst
	}
	b := float64(o.Bytes)
	f := s.cpuOf(o)
	start := max(t, s.egress[src])
	end := start + s.crowd(f)*c.alpha + b*(c.beta+f*c.kappa)
	s.egress[src] = end
	s.finish[src] = max(s.finish[src], end)
	s.msgs++
	s.bytes += o.Bytes
	return s.receive(dst, end+c.lat, b, c.beta, f*c.kappa, f*c.gamma, o.Reduce, reader)
}

// receive takes in a message of b bytes that reaches dst's NIC at t.
func (s *sim) receive(dst int, t, b, beta, kappa, gamma float64, reduce bool, reader *float64) float64 {
	wire := max(t, s.ingress[dst]+b*beta)
	s.ingress[dst] = wire
	cpu := b * kappa
	if reduce {
		cpu += b * gamma
	}
	in := max(wire, *reader) + cpu
	*reader = in
	s.finish[dst] = max(s.finish[dst], in)
	return in
}

// cpuOf is the factor by which o's per-byte software costs (κ, γ) grow on
// a host with more ranks running than cores: the host's ranks that take
// part in o's step (Op.Active) per core, at least 1 (α: crowd of it).
func (s *sim) cpuOf(o *Op) float64 {
	t := &s.topo
	if o.Active == 0 || t.Cores <= 0 {
		return t.cpu()
	}
	on := min(t.PerHost, (int(o.Active)*t.PerHost+s.n-1)/s.n)
	return max(1, float64(on)/float64(t.Cores))
}

// crowd is the factor by which a message's fixed cost (α) and a wake-up
// grow at f running ranks per core: f^Crowd, Crowd fitted by calibrate.
// Its per-byte costs (κ, γ) grow by f itself: the host's cores copy and
// add every rank's bytes, f times one rank's, whereas much of a message's
// fixed cost is waiting (wake-ups, the shaper's timers) that other ranks'
// work fills (docs/design/costmodel.md, Parameters).
func (s *sim) crowd(f float64) float64 {
	if f <= 1 {
		return 1
	}
	return math.Pow(f, s.topo.Inter.Crowd)
}

// wakes is Step's factor at f > 1 running ranks per core:
// (f^Crowd − 1)/Crowd, ln f at Crowd 0 (Box and Cox's transform: the
// proportional f − 1 at Crowd 1, continuous in Crowd down to 0).
func (s *sim) wakes(f float64) float64 {
	c := s.topo.Inter.Crowd
	if c < 1e-9 {
		return math.Log(f)
	}
	return (math.Pow(f, c) - 1) / c
}

// wake is when rank r's op o can go on after a message it waits for is
// in at t: then, where r was busy (sending, reducing) until t; else, where
// it slept, after a wake-up of Step × (crowd − 1) where its host has more
// running ranks than cores, the time the scheduler runs the others first
// (what the per-message α × crowd does not cover: a step of recursive
// doubling at np 8 on 2 cores took 2.7× one at np 4, not 2×; docs/design/costmodel.md).
func (s *sim) wake(r int, o *Op, t float64) float64 {
	if s.topo.Inter.Step == 0 || t <= max(s.egress[r], s.cpu[r]) {
		return t
	}
	if f := s.cpuOf(o); f > 1 {
		return t + s.topo.Inter.Step*s.wakes(f)
	}
	return t
}

// compute runs a local reduction of rank r ready at t and returns its end.
func (s *sim) compute(r int, o *Op, t float64) float64 {
	g := s.topo.Inter.Gamma * s.cpuOf(o)
	if r == s.topo.SlowRank && s.topo.SlowRankFactor > 0 {
		g *= s.topo.SlowRankFactor
	}
	end := max(t, s.cpu[r]) + float64(o.Bytes)*g
	s.cpu[r] = end
	s.finish[r] = max(s.finish[r], end)
	return end
}

func (s *sim) result() Result {
	res := Result{Finish: s.finish, Messages: s.msgs, Bytes: s.bytes}
	for _, f := range s.finish {
		res.Time = max(res.Time, f)
	}
	return res
}

func (s *sim) peer(r int, o *Op, p int32) int {
	if o.Rel {
		return core.Mod(r+int(p), s.n)
	}
	return int(p)
}

// inbox is the receive times of the messages from one rank, on one
// channel, to one rank; times[i] is message base+i.
type inbox struct {
	src    int32
	ch     uint8
	base   int32
	times  []float64
	reader *float64 // the connection's reader: shared by its channels
}

// static evaluates a program whose ranks each send to one peer: rank by
// rank, each as far as the messages it waits for have been computed.
func (s *sim) static() (Result, error) {
	n := s.n
	boxes := make([][]inbox, n)
	hint := make([]int32, n) // per rank: the inbox it last looked up
	box := func(dst, src int, ch uint8) *inbox {
		if h := int(hint[dst]); h < len(boxes[dst]) {
			if b := &boxes[dst][h]; int(b.src) == src && b.ch == ch {
				return b
			}
		}
		for i := range boxes[dst] {
			if b := &boxes[dst][i]; int(b.src) == src && b.ch == ch {
				hint[dst] = int32(i)
				return b
			}
		}
		hint[dst] = int32(len(boxes[dst]))
		boxes[dst] = append(boxes[dst], inbox{src: int32(src), ch: ch})
		return &boxes[dst][len(boxes[dst])-1]
	}
	_, turned := s.prog.(*ringProgram) // consumes each inbox in order
	readers := map[[2]int]*float64{}
	readerOf := func(dst, src int) *float64 {
		k := [2]int{dst, src}
		if readers[k] == nil {
			readers[k] = new(float64)
		}
		return readers[k]
	}
	pc := make([]int, n)
	slots := make([][]float64, n)
	for r := range n {
		slots[r] = make([]float64, s.prog.Slots(r))
	}
	work := make([]int32, 0, n)
	queued := make([]bool, n)
	for r := range n {
		work = append(work, int32(r))
		queued[r] = true
	}
	for len(work) > 0 {
		r := int(work[len(work)-1])
		work = work[:len(work)-1]
		queued[r] = false
		ops := s.prog.Ops(r)
	run:
		for pc[r] < len(ops) {
			o := &ops[pc[r]]
			t := 0.0
			for _, d := range o.Deps[:o.NDeps] {
				if d.Local {
					t = max(t, slots[r][d.Seq])
					continue
				}
				b := box(r, s.peer(r, o, d.Peer), d.Ch)
				i := int(d.Seq - b.base)
				if i >= len(b.times) {
					break run // not yet sent: the sender wakes this rank
				}
				t = max(t, s.wake(r, o, b.times[i]))
				if turned && i > 1024 && i > len(b.times)/2 { // drop what is consumed
					k := copy(b.times, b.times[i:])
					b.times, b.base = b.times[:k], b.base+int32(i)
				}
			}
			var end float64
			if o.Kind == Compute {
				end = s.compute(r, o, t)
			} else {
				dst := s.peer(r, o, o.Peer)
				b := box(dst, r, o.Ch)
				if b.reader == nil {
					b.reader = readerOf(dst, r)
				}
				end = s.transfer(r, dst, o, t, b.reader)
				b = box(dst, r, o.Ch)
				b.times = append(b.times, end)
				if !queued[dst] {
					work = append(work, int32(dst))
					queued[dst] = true
				}
			}
			if o.Slot >= 0 {
				slots[r][o.Slot] = end
			}
			pc[r]++
		}
	}
	for r := range n {
		if pc[r] < len(s.prog.Ops(r)) {
			return Result{}, fmt.Errorf("model: schedule stalled: rank %d at op %d of %d waits for a message never sent", r, pc[r], len(s.prog.Ops(r)))
		}
	}
	return s.result(), nil
}

// events is the discrete-event simulation, for programs whose ranks send
// on several streams and so interleave them by time.
func (s *sim) events() (Result, error) {
	n := s.n
	st := make([]desRank, n)
	for r := range n {
		ops := s.prog.Ops(r)
		d := &st[r]
		d.pending = make([]int32, len(ops))
		d.at = make([]float64, len(ops))
		d.next = make([]int32, len(ops))
		d.waiters = map[key][]int32{}
		d.outSeq = map[[2]int32]int32{}
		last := map[[2]int32]int32{}
		for i := range ops {
			o := &ops[i]
			d.next[i] = -1
			for _, dep := range o.Deps[:o.NDeps] {
				k := key{seq: dep.Seq, slot: dep.Local}
				if !dep.Local {
					k.src, k.ch = int32(s.peer(r, o, dep.Peer)), dep.Ch
				}
				d.waiters[k] = append(d.waiters[k], int32(i))
				d.pending[i]++
			}
			if o.Kind == Send {
				sk := [2]int32{int32(s.peer(r, o, o.Peer)), int32(o.Ch)}
				if p, ok := last[sk]; ok {
					d.next[p] = int32(i)
					d.pending[i]++
				}
				last[sk] = int32(i)
			}
		}
	}
	var q eventQueue
	var msgs []desMsg
	readers := map[[2]int]*float64{}
	push := func(e event) { e.order = q.n; q.n++; heap.Push(&q, e) }
	var ready func(r int, i int32, t float64)
	var startNext func(r int, t float64)
	resolve := func(r int, i int32, t float64) {
		d := &st[r]
		d.at[i] = max(d.at[i], t)
		if d.pending[i]--; d.pending[i] == 0 {
			ready(r, i, d.at[i])
		}
	}
	done := func(r int, i int32, t float64) { // op i of rank r completed at t
		o := &s.prog.Ops(r)[i]
		if o.Slot >= 0 {
			for _, j := range st[r].waiters[key{seq: o.Slot, slot: true}] {
				resolve(r, j, t)
			}
		}
		if j := st[r].next[i]; j >= 0 {
			resolve(r, j, t)
		}
	}
	ready = func(r int, i int32, t float64) {
		o := &s.prog.Ops(r)[i]
		if s.topo.Delay != nil {
			t = max(t, s.topo.Delay[r])
		}
		if o.Kind == Compute {
			push(event{t: s.compute(r, o, t), kind: evDone, rank: int32(r), op: i})
			return
		}
		st[r].at[i] = t
		st[r].queue = append(st[r].queue, i)
		if !st[r].busy {
			startNext(r, t)
		}
	}
	startNext = func(r int, t float64) {
		d := &st[r]
		if len(d.queue) == 0 {
			return
		}
		i := d.queue[0]
		d.queue = d.queue[1:]
		o := &s.prog.Ops(r)[i]
		dst := s.peer(r, o, o.Peer)
		alpha, beta, lat, _, kappa := s.link(r, dst)
		f := s.cpuOf(o)
		start := max(t, d.at[i], s.egress[r]) // ready after a wake, maybe later than t
		end := start + s.crowd(f)*alpha + float64(o.Bytes)*(beta+f*kappa)
		s.egress[r] = end
		s.finish[r] = max(s.finish[r], end)
		d.busy = true
		sk := [2]int32{int32(dst), int32(o.Ch)}
		seq := d.outSeq[sk]
		d.outSeq[sk]++
		msgs = append(msgs, desMsg{src: int32(r), dst: int32(dst), ch: o.Ch, seq: seq, bytes: o.Bytes, reduce: o.Reduce, cpu: f})
		push(event{t: end, kind: evSent, rank: int32(r), op: i})
		push(event{t: end + lat, kind: evArrive, rank: int32(dst), op: int32(len(msgs) - 1)})
		s.msgs++
		s.bytes += o.Bytes
	}
	for r := range n {
		for i, p := range st[r].pending {
			if p == 0 {
				ready(r, int32(i), 0)
			}
		}
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(event)
		r := int(e.rank)
		switch e.kind {
		case evSent:
			st[r].busy = false
			done(r, e.op, e.t)
			startNext(r, e.t)
		case evDone:
			done(r, e.op, e.t)
		case evArrive:
			m := &msgs[e.op]
			_, beta, _, gamma, kappa := s.link(int(m.src), r)
			k := [2]int{r, int(m.src)}
			if readers[k] == nil {
				readers[k] = new(float64)
			}
			in := s.receive(r, e.t, float64(m.bytes), beta, m.cpu*kappa, m.cpu*gamma, m.reduce, readers[k])
			push(event{t: in, kind: evRecv, rank: e.rank, op: e.op})
		case evRecv:
			m := &msgs[e.op]
			for _, j := range st[r].waiters[key{src: m.src, ch: m.ch, seq: m.seq}] {
				resolve(r, j, s.wake(r, &s.prog.Ops(r)[j], e.t))
			}
		}
	}
	for r := range n {
		for i, p := range st[r].pending {
			if p > 0 {
				return Result{}, fmt.Errorf("model: schedule stalled: rank %d op %d waits for %d events that never happen", r, i, p)
			}
		}
	}
	return s.result(), nil
}

type desRank struct {
	pending []int32   // per op: events still awaited
	at      []float64 // per op: when the events awaited so far allow it
	next    []int32   // per send: the next send of its stream
	waiters map[key][]int32
	outSeq  map[[2]int32]int32 // messages sent per (dst, channel)
	queue   []int32            // ready sends, FIFO
	busy    bool
}

// key names an event ops wait for: a message received, or a slot.
type key struct {
	src  int32
	ch   uint8
	seq  int32
	slot bool
}

type desMsg struct {
	src, dst int32
	ch       uint8
	seq      int32
	bytes    int64
	reduce   bool
	cpu      float64 // the sender's step's CPU factor, which the reader shares
}

const (
	evSent   = iota // a send left its sender
	evDone          // a local reduction ended
	evArrive        // a message reached its receiver's reader
	evRecv          // a message was taken in (and reduced)
)

type event struct {
	t     float64
	order int64 // ties: first pushed, first run
	kind  uint8
	rank  int32
	op    int32
}

type eventQueue struct {
	ev []event
	n  int64
}

func (q *eventQueue) Len() int { return len(q.ev) }
func (q *eventQueue) Less(i, j int) bool {
	a, b := &q.ev[i], &q.ev[j]
	return a.t < b.t || a.t == b.t && a.order < b.order
}
func (q *eventQueue) Swap(i, j int) { q.ev[i], q.ev[j] = q.ev[j], q.ev[i] }
func (q *eventQueue) Push(x any)    { q.ev = append(q.ev, x.(event)) }
func (q *eventQueue) Pop() any {
	e := q.ev[len(q.ev)-1]
	q.ev = q.ev[:len(q.ev)-1]
	return e
}
