package core

import (
	"context"
	"fmt"
	"sync"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/kernels"
)

// Call is one collective in progress: what an algorithm uses to talk to the
// other members of its group. Peers are group ranks; channels separate
// concurrent streams between the same pair of ranks within one operation
// (two trees, say). Messages on one channel from one peer arrive in order.
type Call struct {
	ctx context.Context
	g   *Group
	seq uint64
	op  string
	// lane is added to every channel: a phase that runs beside another
	// between the same ranks gets streams of its own (see Call.Sub).
	lane uint8
	part int // see Part
}

// Part tells apart the sub-calls of one operation that run over the same
// members (Hierarchy.AllReduce's allreduces across hosts, one per slice
// and run of shards), the same on every member; 0 for any other call. A
// strategy that names its rounds elsewhere (a parameter server's) adds it
// to their names.
func (c *Call) Part() int { return c.part }

// Ctx is the operation's context, carrying its deadline.
func (c *Call) Ctx() context.Context { return c.ctx }

// Rank is this rank's index in the group.
func (c *Call) Rank() int { return c.g.rank }

// Size is the group's size.
func (c *Call) Size() int { return len(c.g.ranks) }

// GlobalRank maps a rank of the call's group (or sub-call's members) to
// its rank in the world.
func (c *Call) GlobalRank(r int) int { return c.g.ranks[r] }

// Seq is the operation's sequence number in its group.
func (c *Call) Seq() uint64 { return c.seq }

// Option returns a strategy option, or def when unset.
func (c *Call) Option(key, def string) string {
	if v, ok := c.g.shared.cfg.Options[key]; ok {
		return v
	}
	return def
}

func (c *Call) tag(channel uint8) uint64 {
	return uint64(c.g.id)<<40 | (c.seq&0xffffffff)<<8 | uint64(channel+c.lane)
}

// Send sends data to group rank peer on channel.
func (c *Call) Send(peer int, channel uint8, data []byte) error {
	g := c.g
	if err := g.shared.tr.Send(c.ctx, g.ranks[peer], c.tag(channel), data); err != nil {
		return g.peerErr(peer, fmt.Errorf("send: %w", c.explain(peer, err)))
	}
	return nil
}

// SendRecv sends data to group rank to and receives the next message from
// group rank from into buf, both on channel: the receive is posted first, so
// the message lands straight in buf, and the exchange costs no goroutine.
func (c *Call) SendRecv(channel uint8, to int, data []byte, from int, buf []byte) error {
	posted := c.PostRecv(from, channel, buf)
	if err := c.Send(to, channel, data); err != nil {
		posted.Cancel()
		return err
	}
	return posted.Wait()
}

// Recv receives the next message from group rank peer on channel into buf.
func (c *Call) Recv(peer int, channel uint8, buf []byte) error {
	g := c.g
	if err := g.shared.tr.Recv(c.ctx, g.ranks[peer], c.tag(channel), buf); err != nil {
		return g.peerErr(peer, fmt.Errorf("recv: %w", c.explain(peer, err)))
	}
	return nil
}

// Posted is a receive in flight, made by PostRecv.
type Posted struct {
	c    *Call
	peer int
	wait func(ctx context.Context) error

	// The receive completes once, by Wait or Cancel; later calls return
	// the same result.
	once sync.Once
	err  error
}

func (p *Posted) finish(ctx context.Context) error {
	p.once.Do(func() { p.err = p.wait(ctx) })
	return p.err
}

// Wait completes the receive; its error names the peer.
func (p *Posted) Wait() error {
	if err := p.finish(p.c.ctx); err != nil {
		return p.c.g.peerErr(p.peer, fmt.Errorf("recv: %w", p.c.explain(p.peer, err)))
	}
	return nil
}

// CancelAll withdraws every receive of posted that has not completed, for
// an algorithm that gives up (it failed, or its operation was cancelled):
// the buffers must not change after the operation has returned. Receives
// already waited for keep their result.
func CancelAll(posted []*Posted) {
	for _, p := range posted {
		p.Cancel()
	}
}

// Cancel withdraws a receive that will not be waited for, so that its
// buffer is not written after the operation returns. A receive that a
// reader is already filling is waited for (the reader has its own deadline).
func (p *Posted) Cancel() { p.finish(cancelled) }

// cancelled is an already-ended context, for Cancel.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// PostRecv posts a receive of the next message from group rank peer on
// channel into buf and returns at once. Receives posted ahead of their
// messages land in place.
func (c *Call) PostRecv(peer int, channel uint8, buf []byte) *Posted {
	g := c.g
	r, err := g.shared.tr.PostRecv(g.ranks[peer], c.tag(channel), buf)
	return c.posted(peer, r, err)
}

// PostRecvReduce posts a receive of the next message from group rank peer
// on channel that reduces it into buf with op (buf = buf op message) as it
// is read, with no staging buffer.
func (c *Call) PostRecvReduce(peer int, channel uint8, buf []byte, dt collective.DType, op collective.Op) *Posted {
	g := c.g
	r, err := g.shared.tr.PostRecvReduce(g.ranks[peer], c.tag(channel), buf, kernels.Reduction(dt, op))
	return c.posted(peer, r, err)
}

func (c *Call) posted(peer int, r driver.Posted, err error) *Posted {
	if err != nil {
		return &Posted{c: c, peer: peer, wait: func(context.Context) error { return err }}
	}
	return &Posted{c: c, peer: peer, wait: r.Wait}
}

// Parallel runs fns concurrently, each with a Call whose context is cancelled
// as soon as any of them fails, and returns the first error. A failed receive
// thus releases a blocked send at once instead of at its deadline.
func (c *Call) Parallel(fns ...func(*Call) error) error {
	if len(fns) == 1 {
		return fns[0](c)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	sub := *c
	sub.ctx = ctx
	errs := make(chan error, len(fns))
	for _, f := range fns {
		go func() { errs <- f(&sub) }()
	}
	var first error
	for range fns {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// Scratch returns a buffer of n bytes owned by the group, reused across
// operations (operations of a group run one at a time). Index i selects
// among independent buffers.
func (c *Call) Scratch(i, n int) []byte {
	s := &c.g.scratch
	for len(*s) <= i {
		*s = append(*s, nil)
	}
	if cap((*s)[i]) < n {
		(*s)[i] = collective.NewTensor(collective.Uint8, n).Data
	}
	return (*s)[i][:n]
}

// peerErr names the peer, unless the error already does (an abort relayed
// from another rank names its origin).
func (g *Group) peerErr(peer int, err error) error {
	var pe *collective.PeerError
	if asPeer(err, &pe) {
		return err
	}
	global := g.ranks[peer]
	return &collective.PeerError{Rank: global, Addr: g.shared.tr.PeerAddr(global), Err: err}
}
