package core

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/kernels"
)

// Algorithms are a strategy's collectives, called one at a time in issue
// order with arguments already checked. They never see Avg (core sums and
// divides) nor a group of size 1 (core copies). Embed [Simple] to inherit
// correct, plain algorithms for whatever a strategy does not specialise.
type Algorithms interface {
	AllReduce(c *Call, t collective.Tensor, op collective.Op) error
	Reduce(c *Call, t collective.Tensor, root int, op collective.Op) error
	Broadcast(c *Call, t collective.Tensor, root int) error
	AllGather(c *Call, out, in collective.Tensor) error
	ReduceScatter(c *Call, out, in collective.Tensor, op collective.Op) error
	Gather(c *Call, out, in collective.Tensor, root int) error
	Scatter(c *Call, out, in collective.Tensor, root int) error
	AllToAll(c *Call, out, in collective.Tensor) error
	Barrier(c *Call) error
}

// Factory builds a strategy's algorithms for one group (the world, or a
// group made by NewGroup).
type Factory func(g *Group) (Algorithms, error)

// shared is what the groups of one job have in common.
type shared struct {
	strategy string
	cfg      collective.Config
	tr       driver.Transport
	factory  Factory

	// failure is the first failure; every later operation reports it.
	// Atomic: every operation reads it.
	failure atomic.Pointer[error]
	pinned  pinnedPool
}

func (s *shared) fail(err error) {
	if s.failure.CompareAndSwap(nil, &err) && s.tr != nil {
		s.tr.Abort(err)
	}
}

func (s *shared) failed() error {
	if e := s.failure.Load(); e != nil {
		return *e
	}
	return nil
}

// Group is a communicator over some ranks of the job; it implements
// collective.Comm.
type Group struct {
	shared *shared
	ranks  []int // global rank of each member
	rank   int   // this process's index in ranks
	id     uint16
	algos  Algorithms
	top    bool

	exec    *serial
	mu      sync.Mutex
	seq     uint64
	closed  bool
	made    map[string]int // NewGroup calls per member list, for group ids
	sendQ   map[int]*serial
	recvQ   map[int]*serial
	p2pSeq  map[[2]int]uint64
	scratch [][]byte          // see Call.Scratch; used only on the executor
	views   map[string]*Group // see Call.Sub
	viewsMu sync.Mutex

	hierOnce sync.Once
	hier     *Hierarchy // see Call.Hierarchy

	// The diagnoses of operation diagSeq's timeouts, by global peer rank
	// (see Call.explain).
	diagMu  sync.Mutex
	diagSeq uint64
	diags   map[int]*diagnosis
}

var _ collective.Comm = (*Group)(nil)

// New builds the world communicator of a strategy. Strategies call it from
// their collective.Strategy.
func New(strategy string, cfg collective.Config, factory Factory) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ranks := make([]int, cfg.Size)
	for i := range ranks {
		ranks[i] = i
	}
	s := &shared{strategy: strategy, cfg: cfg, tr: cfg.Transport, factory: factory}
	return newGroup(s, ranks, cfg.Rank, 0, true)
}

func newGroup(s *shared, ranks []int, rank int, id uint16, top bool) (*Group, error) {
	g := &Group{
		shared: s, ranks: ranks, rank: rank, id: id, top: top,
		exec: newSerial(), made: map[string]int{},
		sendQ: map[int]*serial{}, recvQ: map[int]*serial{}, p2pSeq: map[[2]int]uint64{},
	}
	algos, err := s.factory(g)
	if err != nil {
		g.exec.close()
		return nil, err
	}
	g.algos = algos
	return g, nil
}

// Rank is this process's rank in the group.
func (g *Group) Rank() int { return g.rank }

// Size is the number of members.
func (g *Group) Size() int { return len(g.ranks) }

// Strategy is the strategy's registered name.
func (g *Group) Strategy() string { return g.shared.strategy }

// Config is the configuration the world was built with.
func (g *Group) Config() collective.Config { return g.shared.cfg }

// GlobalRank maps a group rank to its rank in the world.
func (g *Group) GlobalRank(r int) int { return g.ranks[r] }

// Transport is the job's transport, for strategies that need more than Call
// offers (a parameter server's side channels).
func (g *Group) Transport() driver.Transport { return g.shared.tr }

// submit queues fn as collective op, with the op's deadline, and returns
// its Work.
func (g *Group) submit(ctx context.Context, op string, fn func(c *Call) error) collective.Work {
	w := newWork()
	g.mu.Lock()
	defer g.mu.Unlock() // held while queueing, so queue order is sequence order
	if g.closed {
		w.finish(g.opErr(op, 0, collective.ErrClosed))
		return w
	}
	seq := g.seq
	g.seq++
	if !g.exec.submit(func() { w.finish(g.execute(ctx, op, seq, fn)) }) {
		w.finish(g.opErr(op, seq, collective.ErrClosed))
	}
	return w
}

// do runs fn as collective op and waits for it: on the caller's goroutine
// when no operation is queued ahead of it, else through the queue.
func (g *Group) do(ctx context.Context, op string, fn func(c *Call) error) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return g.opErr(op, 0, collective.ErrClosed)
	}
	seq := g.seq
	var err error
	ran, closed := g.exec.runInline(func() {
		g.seq++
		g.mu.Unlock()
		err = g.execute(ctx, op, seq, fn)
	})
	if ran {
		return err
	}
	g.mu.Unlock()
	if closed {
		return g.opErr(op, seq, collective.ErrClosed)
	}
	return g.submit(ctx, op, fn).Wait(ctx)
}

// execute runs one collective: fail fast if the job has failed, apply the
// deadline, and on error abort the job so every rank learns of it.
func (g *Group) execute(ctx context.Context, op string, seq uint64, fn func(c *Call) error) error {
	if err := g.shared.failed(); err != nil {
		return g.opErr(op, seq, fmt.Errorf("communicator failed earlier: %w", err))
	}
	// The Call and its context in one allocation.
	o := &struct {
		ctx  opCtx
		call Call
	}{}
	o.ctx.init(ctx, g.shared.cfg.OpTimeout())
	defer o.ctx.end()
	o.call = Call{ctx: &o.ctx, g: g, seq: seq, op: op}
	err := fn(&o.call)
	if err != nil {
		err = g.opErr(op, seq, err)
		g.shared.fail(err)
	}
	return err
}

func (g *Group) opErr(op string, seq uint64, err error) error {
	return &collective.OpError{Strategy: g.shared.strategy, Op: op, Seq: seq, Err: err}
}

func (g *Group) invalidErr(op string, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", g.shared.strategy, op, collective.Invalidf(format, args...))
}

// pending is a checked operation ready to run: its name and body, or the
// error that rejected its arguments.
type pending struct {
	name string
	fn   func(c *Call) error
	err  error
	// onHost stages device tensors through host memory even for
	// algorithms that take device memory: the operation has a step of its
	// own on the host (MulSum's pre-multiplication).
	onHost bool
}

// start runs o asynchronously.
func (g *Group) start(ctx context.Context, o pending) collective.Work {
	if o.err != nil {
		return failed(o.err)
	}
	return g.submit(ctx, o.name, o.fn)
}

// run runs o and waits for it.
func (g *Group) run(ctx context.Context, o pending) error {
	if o.err != nil {
		return o.err
	}
	return g.do(ctx, o.name, o.fn)
}

// checkRoot and friends validate arguments on the caller's goroutine, so a
// bad call fails at once and consumes no sequence number.
func (g *Group) checkRoot(root int) error {
	if root < 0 || root >= g.Size() {
		return fmt.Errorf("root %d out of range (accepted: 0..%d)", root, g.Size()-1)
	}
	return nil
}

func checkTensor(name string, t collective.Tensor) error {
	if !t.DType.Valid() {
		return fmt.Errorf("%s has invalid dtype %d", name, t.DType)
	}
	if t.Bytes()%t.DType.Size() != 0 {
		return fmt.Errorf("%s holds %d bytes, not a whole number of %s elements", name, t.Bytes(), t.DType)
	}
	return nil
}

// checkPair validates an out/in pair whose counts satisfy
// out.Count()×outScale = in.Count()×inScale (allgather: 1, Size()).
func (g *Group) checkPair(out, in collective.Tensor, outScale, inScale int) error {
	if err := checkTensor("out", out); err != nil {
		return err
	}
	if err := checkTensor("in", in); err != nil {
		return err
	}
	if out.DType != in.DType {
		return fmt.Errorf("out is %s but in is %s", out.DType, in.DType)
	}
	if out.Count()*outScale != in.Count()*inScale {
		return fmt.Errorf("out has %d elements and in %d; want out×%d = in×%d (group size %d)",
			out.Count(), in.Count(), outScale, inScale, g.Size())
	}
	return nil
}

func (g *Group) allReduceOp(t collective.Tensor, op collective.Op) pending {
	if err := errors.Join(checkTensor("tensor", t), checkOp(op)); err != nil {
		return pending{err: g.invalidErr("allreduce", "%v", err)}
	}
	op, finish := g.finishAvg(op, t)
	op, scale, onHost := g.premul(op)
	return g.staged(pending{name: "allreduce", onHost: onHost, fn: func(c *Call) error {
		if g.Size() > 1 {
			kernels.Scale(t, scale) // in place: t is overwritten with the result
			if err := g.algos.AllReduce(c, t, op); err != nil {
				return err
			}
		}
		finish(t)
		return nil
	}}, readsWrites(&t))
}

func (g *Group) reduceOp(t collective.Tensor, root int, op collective.Op) pending {
	if err := errors.Join(checkTensor("tensor", t), checkOp(op), g.checkRoot(root)); err != nil {
		return pending{err: g.invalidErr("reduce", "%v", err)}
	}
	op, finish := g.finishAvg(op, t)
	op, scale, onHost := g.premul(op)
	return g.staged(pending{name: "reduce", onHost: onHost, fn: func(c *Call) error {
		if g.Size() > 1 {
			kernels.Scale(t, scale) // in place: a non-root's t is left unspecified
			if err := g.algos.Reduce(c, t, root, op); err != nil {
				return err
			}
		}
		if g.rank == root {
			finish(t)
		}
		return nil
	}}, readsWrites(&t))
}

func (g *Group) broadcastOp(t collective.Tensor, root int) pending {
	if err := errors.Join(checkTensor("tensor", t), g.checkRoot(root)); err != nil {
		return pending{err: g.invalidErr("broadcast", "%v", err)}
	}
	return g.staged(pending{name: "broadcast", fn: func(c *Call) error {
		if g.Size() == 1 {
			return nil
		}
		return g.algos.Broadcast(c, t, root)
	}}, readsWrites(&t))
}

func (g *Group) allGatherOp(out, in collective.Tensor) pending {
	if err := g.checkPair(out, in, 1, g.Size()); err != nil {
		return pending{err: g.invalidErr("allgather", "%v", err)}
	}
	return g.staged(pending{name: "allgather", fn: func(c *Call) error {
		if g.Size() == 1 {
			return copyTensor(out, in)
		}
		return g.algos.AllGather(c, out, in)
	}}, writes(&out), reads(&in))
}

func (g *Group) reduceScatterOp(out, in collective.Tensor, op collective.Op) pending {
	if err := errors.Join(g.checkPair(out, in, g.Size(), 1), checkOp(op)); err != nil {
		return pending{err: g.invalidErr("reducescatter", "%v", err)}
	}
	op, finish := g.finishAvg(op, out)
	op, scale, onHost := g.premul(op)
	return g.staged(pending{name: "reducescatter", onHost: onHost, fn: func(c *Call) error {
		if g.Size() == 1 {
			if err := copyTensor(out, in); err != nil {
				return err
			}
			finish(out)
			return nil
		}
		src := in
		if scale != 1 { // in is the caller's, and read-only: scale a copy
			src = in.Clone()
			kernels.Scale(src, scale)
		}
		if err := g.algos.ReduceScatter(c, out, src, op); err != nil {
			return err
		}
		finish(out)
		return nil
	}}, writes(&out), reads(&in))
}

func (g *Group) gatherOp(out, in collective.Tensor, root int) pending {
	err := errors.Join(g.checkRoot(root), checkTensor("in", in))
	if err == nil && g.rank == root {
		err = g.checkPair(out, in, 1, g.Size())
	}
	if err != nil {
		return pending{err: g.invalidErr("gather", "%v", err)}
	}
	return g.staged(pending{name: "gather", fn: func(c *Call) error {
		if g.Size() == 1 {
			return copyTensor(out, in)
		}
		return g.algos.Gather(c, out, in, root)
	}}, writes(&out), reads(&in))
}

func (g *Group) scatterOp(out, in collective.Tensor, root int) pending {
	err := errors.Join(g.checkRoot(root), checkTensor("out", out))
	if err == nil && g.rank == root {
		err = g.checkPair(out, in, g.Size(), 1)
	}
	if err != nil {
		return pending{err: g.invalidErr("scatter", "%v", err)}
	}
	return g.staged(pending{name: "scatter", fn: func(c *Call) error {
		if g.Size() == 1 {
			return copyTensor(out, in)
		}
		return g.algos.Scatter(c, out, in, root)
	}}, writes(&out), reads(&in))
}

func (g *Group) allToAllOp(out, in collective.Tensor) pending {
	err := g.checkPair(out, in, 1, 1)
	if err == nil && in.Count()%g.Size() != 0 {
		err = fmt.Errorf("%d elements do not split into %d equal blocks", in.Count(), g.Size())
	}
	if err != nil {
		return pending{err: g.invalidErr("alltoall", "%v", err)}
	}
	return g.staged(pending{name: "alltoall", fn: func(c *Call) error {
		if g.Size() == 1 {
			return copyTensor(out, in)
		}
		return g.algos.AllToAll(c, out, in)
	}}, writes(&out), reads(&in))
}

func (g *Group) barrierOp() pending {
	return pending{name: "barrier", fn: func(c *Call) error {
		if g.Size() == 1 {
			return nil
		}
		return g.algos.Barrier(c)
	}}
}

func (g *Group) IAllReduce(ctx context.Context, t collective.Tensor, op collective.Op) collective.Work {
	return g.start(ctx, g.allReduceOp(t, op))
}

func (g *Group) AllReduce(ctx context.Context, t collective.Tensor, op collective.Op) error {
	return g.run(ctx, g.allReduceOp(t, op))
}

func (g *Group) IReduce(ctx context.Context, t collective.Tensor, root int, op collective.Op) collective.Work {
	return g.start(ctx, g.reduceOp(t, root, op))
}

func (g *Group) Reduce(ctx context.Context, t collective.Tensor, root int, op collective.Op) error {
	return g.run(ctx, g.reduceOp(t, root, op))
}

func (g *Group) IBroadcast(ctx context.Context, t collective.Tensor, root int) collective.Work {
	return g.start(ctx, g.broadcastOp(t, root))
}

func (g *Group) Broadcast(ctx context.Context, t collective.Tensor, root int) error {
	return g.run(ctx, g.broadcastOp(t, root))
}

func (g *Group) IAllGather(ctx context.Context, out, in collective.Tensor) collective.Work {
	return g.start(ctx, g.allGatherOp(out, in))
}

func (g *Group) AllGather(ctx context.Context, out, in collective.Tensor) error {
	return g.run(ctx, g.allGatherOp(out, in))
}

func (g *Group) IReduceScatter(ctx context.Context, out, in collective.Tensor, op collective.Op) collective.Work {
	return g.start(ctx, g.reduceScatterOp(out, in, op))
}

func (g *Group) ReduceScatter(ctx context.Context, out, in collective.Tensor, op collective.Op) error {
	return g.run(ctx, g.reduceScatterOp(out, in, op))
}

func (g *Group) IGather(ctx context.Context, out, in collective.Tensor, root int) collective.Work {
	return g.start(ctx, g.gatherOp(out, in, root))
}

func (g *Group) Gather(ctx context.Context, out, in collective.Tensor, root int) error {
	return g.run(ctx, g.gatherOp(out, in, root))
}

func (g *Group) IScatter(ctx context.Context, out, in collective.Tensor, root int) collective.Work {
	return g.start(ctx, g.scatterOp(out, in, root))
}

func (g *Group) Scatter(ctx context.Context, out, in collective.Tensor, root int) error {
	return g.run(ctx, g.scatterOp(out, in, root))
}

func (g *Group) IAllToAll(ctx context.Context, out, in collective.Tensor) collective.Work {
	return g.start(ctx, g.allToAllOp(out, in))
}

func (g *Group) AllToAll(ctx context.Context, out, in collective.Tensor) error {
	return g.run(ctx, g.allToAllOp(out, in))
}

func (g *Group) IBarrier(ctx context.Context) collective.Work {
	return g.start(ctx, g.barrierOp())
}

func (g *Group) Barrier(ctx context.Context) error {
	return g.run(ctx, g.barrierOp())
}

// NewGroup makes a communicator over ranks (ranks of g). Its id, which
// separates its messages from every other group's, is derived from g's id,
// the member list and how many times these members made such a group, so
// only members need call it.
func (g *Group) NewGroup(ranks []int) (collective.Comm, error) {
	seen := map[int]bool{}
	me := -1
	for i, r := range ranks {
		if r < 0 || r >= g.Size() {
			return nil, fmt.Errorf("%s: new group: rank %d out of range (accepted: 0..%d)", g.shared.strategy, r, g.Size()-1)
		}
		if seen[r] {
			return nil, fmt.Errorf("%s: new group: rank %d listed twice", g.shared.strategy, r)
		}
		seen[r] = true
		if r == g.rank {
			me = i
		}
	}
	if me < 0 {
		return nil, fmt.Errorf("%s: new group %v: rank %d is not a member", g.shared.strategy, ranks, g.rank)
	}
	key := fmt.Sprint(ranks)
	g.mu.Lock()
	n := g.made[key]
	g.made[key]++
	g.mu.Unlock()
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s/%d", g.id, key, n)
	id := uint16(h.Sum32()&0x7fff) | 0x8000 // never 0, the world's id
	global := make([]int, len(ranks))
	for i, r := range ranks {
		global[i] = g.ranks[r]
	}
	return newGroup(g.shared, global, me, id, false)
}

// Close stops the group's executors; for the world it also closes the
// transport. Operations already queued fail with ErrClosed.
func (g *Group) Close() error {
	if !g.closeOps() {
		return nil
	}
	if g.top && g.shared.tr != nil && !g.shared.cfg.KeepTransport {
		return g.shared.tr.Close()
	}
	return nil
}

// CloseLeavingTransport closes the group as Close does, but leaves the
// job's transport open for its caller to close: a strategy whose servers
// still serve other ranks over it after this rank's last operation (a
// parameter server's colocated servers) closes it once they are done.
func (g *Group) CloseLeavingTransport() {
	g.closeOps()
}

// closeOps ends the group's queues; it reports false if the group was
// closed already.
func (g *Group) closeOps() bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.closed = true
	if g.top {
		g.shared.pinned.close()
	}
	queues := []*serial{g.exec}
	for _, q := range g.sendQ {
		queues = append(queues, q)
	}
	for _, q := range g.recvQ {
		queues = append(queues, q)
	}
	g.mu.Unlock()
	for _, q := range queues {
		q.close()
	}
	return true
}

func asPeer(err error, target **collective.PeerError) bool { return errors.As(err, target) }
