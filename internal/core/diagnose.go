package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// When a wait reaches the operation's deadline, every rank of a stalled job
// times out at about the same time, each on its own neighbour, and the
// first to fail aborts the job with its error: which, by itself, names a
// victim, not the rank that stalled. So before failing, a rank that timed
// out asks the transport (a driver.Diagnoser) to follow the chain of
// waits from the peer it waited for to the rank where it ends, and says
// what it found in the TimeoutError's Cause; the abort relays that text to
// every rank.

// Bounds of a diagnosis: half the operation's timeout, within these. A rank
// that does not answer costs the whole budget, so it must stay short; and a
// live rank on a loaded machine may answer later than that, so one that
// did not answer is not called stopped: it may be stopped, stuck or starved.
const (
	minDiagnosis = 50 * time.Millisecond
	maxDiagnosis = time.Second
)

func (s *shared) diagnosisBudget() time.Duration {
	return min(max(s.cfg.OpTimeout()/2, minDiagnosis), maxDiagnosis)
}

// waitingIn names the operation a timed-out wait belonged to, so that a
// diagnosis can tell whether the ranks it meets wait in the same one.
type waitingIn struct {
	p2p  bool
	seq  uint64
	name string // "allreduce #4"; "" for point-to-point
}

// diagnosis is the outcome of following one chain of waits: the cause to
// add to the timeout, or the abort of another rank that arrived meanwhile.
type diagnosis struct {
	once  sync.Once
	cause string
	abort error
}

// explain returns err with its cause when err is a timeout of the receive
// from (or send to) group rank peer that c's deadline ended. Within one
// operation, each peer is diagnosed once: concurrent timeouts of the same
// wait (the branches of Parallel) share the result.
func (c *Call) explain(peer int, err error) error {
	if !diagnosable(c.ctx, err) {
		return err
	}
	g := c.g
	global := g.ranks[peer]
	g.diagMu.Lock()
	if g.diags == nil || g.diagSeq != c.seq {
		g.diags, g.diagSeq = map[int]*diagnosis{}, c.seq
	}
	d := g.diags[global]
	if d == nil {
		d = &diagnosis{}
		g.diags[global] = d
	}
	g.diagMu.Unlock()
	d.once.Do(func() { g.diagnose(c.ctx, global, waitingIn{seq: c.seq, name: fmt.Sprintf("%s #%d", c.op, c.seq)}, d) })
	return d.apply(err)
}

// explainP2P is explain for a point-to-point operation with global rank
// peer.
func (g *Group) explainP2P(ctx context.Context, peer int, err error) error {
	if !diagnosable(ctx, err) {
		return err
	}
	var d diagnosis
	g.diagnose(ctx, peer, waitingIn{p2p: true}, &d)
	return d.apply(err)
}

// diagnosable: only a wait that ran into the operation's deadline is
// explained; a cancelled one was given up on purpose, and a failed link
// names its peer already.
func diagnosable(ctx context.Context, err error) bool {
	te, ok := err.(*collective.TimeoutError)
	return ok && te.Cause == "" && ctx.Err() == context.DeadlineExceeded
}

func (d *diagnosis) apply(err error) error {
	switch {
	case d.abort != nil:
		// Another rank aborted while this one asked around: its error,
		// diagnosed already, is the job's.
		return d.abort
	case d.cause == "":
		return err
	}
	te := *err.(*collective.TimeoutError)
	te.Cause = d.cause
	return &te
}

func (g *Group) diagnose(ctx context.Context, peer int, in waitingIn, d *diagnosis) {
	dg, ok := g.shared.tr.(driver.Diagnoser)
	if !ok {
		return
	}
	budget := g.shared.diagnosisBudget()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	chain := dg.Diagnose(dctx, peer)
	cancel()
	for _, w := range chain {
		if errors.Is(w.Err, collective.ErrAborted) {
			d.abort = w.Err
			return
		}
	}
	d.cause = g.describeWaits(chain, in, budget)
}

// describeWaits renders a chain of waits, as in
//
//	rank 1 waits for rank 0, which waits for rank 3; rank 3 (10.0.0.4:4100) waits for no message: it has not joined allreduce #7 (busy or stuck elsewhere)
//
// It names the rank where the chain ends last, with its address (the first
// rank's is in the timeout already), or says that the chain is a cycle.
func (g *Group) describeWaits(chain []driver.WaitState, in waitingIn, budget time.Duration) string {
	if len(chain) == 0 {
		return ""
	}
	self := g.shared.cfg.Rank
	last := chain[len(chain)-1]
	cycle := last.Err == nil && last.Peer >= 0
	edges := chain
	if !cycle {
		edges = chain[:len(chain)-1]
	}
	var b strings.Builder
	elsewhere := false // some rank waits in another operation of this group
	for i, w := range edges {
		if i == 0 {
			fmt.Fprintf(&b, "rank %d", w.Rank)
		} else {
			b.WriteString(", which")
		}
		b.WriteString(" waits")
		if where := g.opOf(w.Tag, in); where != "" {
			b.WriteString(" in " + where)
			_, _, coll := splitTag(w.Tag)
			elsewhere = elsewhere || coll && !in.p2p
		}
		fmt.Fprintf(&b, " for rank %d", w.Peer)
		if w.Peer == self {
			b.WriteString(" (this rank)")
		}
		if w.Send {
			b.WriteString(" to take a message")
		}
	}
	if cycle {
		if elsewhere {
			b.WriteString(": a cycle of waits across operations: the ranks disagree on their order")
		} else {
			b.WriteString(": a cycle of waits (a deadlock, or ranks that disagree on the order of operations)")
		}
		return b.String()
	}
	if len(edges) > 0 {
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "rank %d", last.Rank)
	if len(edges) > 0 && last.Addr != "" {
		fmt.Fprintf(&b, " (%s)", last.Addr)
	}
	switch {
	case last.Err == nil:
		awaited := in.name
		if len(edges) > 0 {
			awaited = g.opName(edges[len(edges)-1].Tag, in)
		}
		if awaited == "" {
			b.WriteString(" waits for no message (busy or stuck elsewhere)")
		} else {
			fmt.Fprintf(&b, " waits for no message: it has not joined %s (busy or stuck elsewhere)", awaited)
		}
	case errors.Is(last.Err, context.DeadlineExceeded):
		fmt.Fprintf(&b, " did not answer within %v (stopped, stuck, or too starved of CPU to answer)", budget)
	default:
		why := last.Err
		var pe *collective.PeerError
		if errors.As(why, &pe) && pe.Rank == last.Rank {
			why = pe.Err // it names the rank already
		}
		fmt.Fprintf(&b, " could not be asked: %v", why)
	}
	return b.String()
}

// splitTag decodes a collective's tag (see Call.tag): its group's id and the
// low 32 bits of its sequence number; ok is false for a point-to-point tag.
func splitTag(tag uint64) (group uint16, seq32 uint32, ok bool) {
	if tag&(1<<63) != 0 {
		return 0, 0, false
	}
	return uint16(tag >> 40), uint32(tag >> 8), true
}

// opOf names the operation a wait under tag is in, "" when it is in, the
// operation of this rank's timed-out wait.
func (g *Group) opOf(tag uint64, in waitingIn) string {
	group, seq32, ok := splitTag(tag)
	switch {
	case !ok:
		return fmt.Sprintf("a point-to-point receive (tag %d)", tag&maxUserTag)
	case group != g.id:
		return fmt.Sprintf("another group's operation #%d", seq32)
	case in.p2p:
		return fmt.Sprintf("operation #%d", seq32)
	case nearestSeq(seq32, in.seq) == in.seq:
		return ""
	}
	return fmt.Sprintf("operation #%d", nearestSeq(seq32, in.seq))
}

// opName names the operation a wait under tag is in, "" for a
// point-to-point receive.
func (g *Group) opName(tag uint64, in waitingIn) string {
	if _, _, ok := splitTag(tag); !ok {
		return ""
	}
	if name := g.opOf(tag, in); name != "" {
		return name
	}
	return in.name
}

// nearestSeq is the sequence number nearest to near whose low 32 bits, all
// that a tag carries, are seq32.
func nearestSeq(seq32 uint32, near uint64) uint64 {
	return near + uint64(int64(int32(seq32-uint32(near))))
}
