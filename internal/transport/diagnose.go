package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/wire"
)

// A rank's wait state is the operations it is blocked in, at most one per
// peer (see Mailbox.blockedOn): the receive that timed out, if one did (the
// rank is failing because of it, and must keep saying so while the other
// ranks diagnose their own timeouts), the receives its goroutines wait in,
// and over TCP the sends in progress; the one that timed out first, then
// the oldest. None at all says that it is blocked in nothing. Both
// transports answer wait queries from it (see driver.Diagnoser), and
// follow the answers from rank to rank to explain a timeout.

// epoch is the origin of mono times: the wait state's clock is monotonic
// nanoseconds since it, never 0, so that 0 can mean "not blocked".
var epoch = time.Now()

// mono turns t into a mono time. t comes from a clock reading its caller
// makes anyway: with both times monotonic, this is a subtraction.
func mono(t time.Time) int64 { return max(int64(t.Sub(epoch)), 1) }

// stamp is a mono time in 32 bits, for Pending: milliseconds, wrapping
// every 49 days, never 0.
func stamp(t time.Time) uint32 { return max(uint32(t.Sub(epoch)/time.Millisecond), 1) }

// unstamp turns a stamp back into a mono time, for a stamp taken less than
// 49 days ago.
func unstamp(s uint32) int64 {
	now := time.Since(epoch)
	age := time.Duration(uint32(now/time.Millisecond)-s) * time.Millisecond
	return max(int64(now-age), 1)
}

// blockedOn is a wait a rank is blocked in; kind 0 means none.
type blockedOn struct {
	kind     wire.WaitKind
	timedOut bool
	peer     int
	tag      uint64
	since    int64 // mono time it began to block
}

// rather reports whether b is a wait more telling than c: one at all, then
// one that timed out, then the oldest.
func (b blockedOn) rather(c blockedOn) bool {
	switch {
	case b.kind == 0:
		return false
	case c.kind == 0:
		return true
	case b.timedOut != c.timedOut:
		return b.timedOut
	}
	return b.since < c.since
}

// waits turns a rank's candidate waits into its answer to a wait query: the
// most telling per peer, most telling first, at most wire.MaxWaits.
func waits(cands []blockedOn) []wire.Wait {
	cands = slices.DeleteFunc(cands, func(b blockedOn) bool { return b.kind == 0 })
	slices.SortStableFunc(cands, func(a, b blockedOn) int {
		switch {
		case a.rather(b):
			return -1
		case b.rather(a):
			return 1
		}
		return 0
	})
	now := time.Since(epoch)
	var ws []wire.Wait
	seen := map[int]bool{}
	for _, b := range cands {
		if seen[b.peer] || len(ws) == wire.MaxWaits {
			continue
		}
		seen[b.peer] = true
		ws = append(ws, wire.Wait{Kind: b.kind, TimedOut: b.timedOut, Peer: b.peer, Tag: b.tag, Age: max(now-time.Duration(b.since), 0)})
	}
	return ws
}

// follow explains why this rank (self) waits for first: it asks first what
// it is blocked in, then the ranks it names, and so on, depth first with
// each rank's most telling wait first, until it finds a rank blocked in
// nothing or one that does not answer (ask fails: ctx's deadline, a failed
// link), and returns the path from first to that rank. A rank can wait for
// several (the branches of a double tree), so a path that comes back to a
// rank already asked does not prove a deadlock: only when every path does
// is the first such path returned, a cycle. Each rank is asked once, this
// one included (ask answers for it locally: it may itself wait for others
// than first), and every ask runs under ctx, so the walk ends by ctx's
// deadline.
func follow(ctx context.Context, self, size, first int, addr func(int) string,
	ask func(ctx context.Context, rank int) ([]wire.Wait, error)) []driver.WaitState {
	asked := map[int]bool{}
	var path, cycle []driver.WaitState
	var walk func(r int) bool
	walk = func(r int) bool {
		asked[r] = true
		ws := driver.WaitState{Rank: r, Addr: addr(r), Peer: -1}
		waits, err := ask(ctx, r)
		for _, w := range waits {
			if w.Peer >= size || w.Peer == r {
				err = fmt.Errorf("answered that it waits for rank %d, which is not one of its peers in a world of %d", w.Peer, size)
			}
		}
		if err != nil || len(waits) == 0 {
			ws.Err = err
			path = append(path, ws)
			return true
		}
		// Other ranks before this one: a path through it that ends
		// elsewhere says less.
		slices.SortStableFunc(waits, func(a, b wire.Wait) int { return cmpBool(a.Peer == self, b.Peer == self) })
		for _, w := range waits {
			ws.Peer, ws.Send, ws.Tag, ws.For, ws.TimedOut = w.Peer, w.Kind == wire.WaitSend, w.Tag, w.Age, w.TimedOut
			path = append(path, ws)
			if !asked[w.Peer] {
				if walk(w.Peer) {
					return true
				}
			} else if cycle == nil {
				cycle = slices.Clone(path)
			}
			path = path[:len(path)-1]
		}
		return false
	}
	if walk(first) {
		return path
	}
	return cycle
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Diagnose follows the chain of waits from peer (see driver.Diagnoser).
// Every rank answers at once, from its mailboxes; a rank that has closed or
// aborted answers with the error its link reports. In-memory sends never
// block, so every wait is a receive.
func (m *Mem) Diagnose(ctx context.Context, peer int) []driver.WaitState {
	if m.checkPeer(peer) != nil {
		return nil
	}
	return follow(ctx, m.rank, m.Size(), peer, m.PeerAddr, m.ask)
}

func (m *Mem) ask(ctx context.Context, rank int) ([]wire.Wait, error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, collective.ErrClosed
	}
	if rank == m.rank {
		return m.waitState(), nil
	}
	if err := m.boxes[rank].Err(); err != nil {
		return nil, err // it aborted the job, say, or another rank did
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	other := m.world.ranks[rank]
	other.mu.Lock()
	closed = other.closed
	other.mu.Unlock()
	if closed {
		return nil, &collective.PeerError{Rank: rank, Err: ErrPeerClosed}
	}
	ws := other.waitState()
	// An abort that has reached the other rank, and not yet this one, has
	// failed its waits: it is blocked in nothing because of that abort,
	// which is the answer (its waits, read before, are then stale).
	if err := other.boxes[m.rank].Err(); errors.Is(err, collective.ErrAborted) {
		return nil, err
	}
	return ws, nil
}

// waitState is what this rank is blocked in: receives only, since
// in-memory sends never block.
func (m *Mem) waitState() []wire.Wait {
	var cands []blockedOn
	for src, box := range m.boxes {
		if src != m.rank {
			cands = append(cands, box.blockedOn(src))
		}
	}
	return waits(cands)
}

// maxAnswers bounds the wait replies queued per peer; answerTimeout bounds
// the wait for the write lock to send one, and the write itself.
const (
	maxAnswers    = 4
	answerTimeout = time.Second
)

// waitState is what this rank is blocked in now.
func (t *TCP) waitState() []wire.Wait {
	if !t.ready.Load() {
		return nil
	}
	var cands []blockedOn
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		cands = append(cands, p.box.blockedOn(p.rank))
		if since := p.sendSince.Load(); since != 0 {
			cands = append(cands, blockedOn{kind: wire.WaitSend, peer: p.rank, tag: p.sendTag.Load(), since: since})
		}
	}
	return waits(cands)
}

// Diagnose follows the chain of waits from peer (see driver.Diagnoser):
// it sends each rank a wait query, which that rank's reader answers from its
// mailboxes without involving the rank's own goroutines.
func (t *TCP) Diagnose(ctx context.Context, peer int) []driver.WaitState {
	if _, err := t.peer(peer); err != nil {
		return nil
	}
	return follow(ctx, t.o.Rank, t.o.Size, peer, t.PeerAddr, t.ask)
}

// ask sends rank a wait query and waits for the reply, until ctx ends or the
// link or the job fails.
func (t *TCP) ask(ctx context.Context, rank int) ([]wire.Wait, error) {
	if rank == t.o.Rank {
		if t.isClosed() {
			return nil, collective.ErrClosed
		}
		return t.waitState(), nil
	}
	p := t.peers[rank]
	if err := t.sendErr(p); err != nil {
		return nil, err
	}
	ch := make(chan []wire.Wait, 1)
	t.qmu.Lock()
	t.lastQ++
	id := t.lastQ
	if t.queries == nil {
		t.queries = map[uint64]query{}
	}
	t.queries[id] = query{p, ch}
	t.qmu.Unlock()
	defer func() {
		t.qmu.Lock()
		delete(t.queries, id)
		t.qmu.Unlock()
	}()

	if err := p.lock(ctx); err != nil {
		// A send holds the lock: one stuck on a peer that reads nothing
		// makes it not answer, as it should.
		return nil, err
	}
	err := t.sendErr(p)
	if err == nil && p.wclosed {
		err = collective.ErrClosed
	}
	if err == nil {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(answerTimeout)
		}
		err = t.writeControl(p, "a wait query", wire.Header{Kind: wire.KindWaitQuery, Tag: id}, nil, deadline)
	}
	p.unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	select {
	case ws := <-ch:
		return ws, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.jobFailed:
	case <-p.exited:
	case <-t.done:
	}
	if err := t.sendErr(p); err != nil {
		return nil, err
	}
	return nil, p.peerErr(errors.New("closed the connection"))
}

// respond sends the replies the reader queued for p's wait queries.
func (t *TCP) respond(p *peer) {
	defer t.wg.Done()
	var payload []byte
	for {
		var a answer
		select {
		case <-t.done:
			return
		case <-p.exited:
			return
		case a = <-p.answers:
		}
		tm := time.NewTimer(answerTimeout)
		select {
		case p.wmu <- struct{}{}:
		case <-tm.C:
			continue // the asker has given up by now
		case <-t.done:
			tm.Stop()
			return
		}
		tm.Stop()
		if p.err() == nil && !p.wclosed {
			payload = wire.AppendWaits(payload[:0], a.waits)
			h := wire.Header{Kind: wire.KindWaitReply, Tag: a.id, Length: uint64(len(payload))}
			t.writeControl(p, "a wait reply", h, payload, time.Now().Add(answerTimeout))
		}
		p.unlock()
	}
}
