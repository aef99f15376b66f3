package transport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// MemOptions shapes an in-memory world for tests.
type MemOptions struct {
	// MaxDelay, if positive, delays each message by a random duration in
	// [0, MaxDelay), drawn from Seed, so that arrival order varies across
	// links while staying FIFO within one (source, tag) stream.
	MaxDelay time.Duration
	Seed     uint64
	// Hosts, if set, names each rank's host (driver.Topology), as many
	// names as ranks; unset, every rank is on one host, "mem".
	Hosts []string
}

// NewMemWorld returns size connected in-memory transports, one per rank.
func NewMemWorld(size int, opts MemOptions) []*Mem {
	if opts.Hosts != nil && len(opts.Hosts) != size {
		panic(fmt.Sprintf("transport: MemOptions.Hosts names %d hosts for %d ranks", len(opts.Hosts), size))
	}
	w := &memWorld{opts: opts, ranks: make([]*Mem, size)}
	for r := range size {
		m := &Mem{world: w, rank: r, boxes: make([]*Mailbox, size), lastDue: make([]time.Time, size), links: make([]chan delayed, size)}
		for src := range size {
			m.boxes[src] = NewMailbox(fmt.Sprintf("rank %d", src))
		}
		m.rng = rand.New(rand.NewPCG(opts.Seed, uint64(r)))
		w.ranks[r] = m
	}
	return w.ranks
}

type memWorld struct {
	opts  MemOptions
	ranks []*Mem
}

// Mem is one rank's end of an in-memory world.
type Mem struct {
	world *memWorld
	rank  int
	boxes []*Mailbox // by source rank

	mu      sync.Mutex
	closed  bool
	rng     *rand.Rand
	lastDue []time.Time    // per destination: delays never reorder a link
	links   []chan delayed // per destination, when delayed

	wire wireCount
}

var (
	_ driver.Transport = (*Mem)(nil)
	_ driver.Transport = (*TCP)(nil)
	_ driver.Topology  = (*Mem)(nil)
	_ driver.Topology  = (*TCP)(nil)

	_ driver.Diagnoser = (*Mem)(nil)
	_ driver.Diagnoser = (*TCP)(nil)
)

func (m *Mem) Rank() int                { return m.rank }
func (m *Mem) Size() int                { return len(m.world.ranks) }
func (m *Mem) PeerAddr(peer int) string { return "" }

// HostOf is rank's host as MemOptions.Hosts names it.
func (m *Mem) HostOf(rank int) string {
	switch {
	case rank < 0 || rank >= len(m.world.ranks):
		return ""
	case m.world.opts.Hosts == nil:
		return "mem"
	}
	return m.world.opts.Hosts[rank]
}

func (m *Mem) checkPeer(peer int) error {
	if peer < 0 || peer >= m.Size() || peer == m.rank {
		return fmt.Errorf("transport: peer %d out of range for rank %d of %d", peer, m.rank, m.Size())
	}
	return nil
}

// Send copies data and delivers it to peer, after the configured delay.
func (m *Mem) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	if err := m.checkPeer(peer); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return collective.ErrClosed
	}
	var due time.Time
	if d := m.world.opts.MaxDelay; d > 0 {
		due = time.Now().Add(time.Duration(m.rng.Int64N(int64(d))))
		if due.Before(m.lastDue[peer]) {
			due = m.lastDue[peer]
		}
		m.lastDue[peer] = due
	}
	m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	box := m.world.ranks[peer].boxes[m.rank]
	if err := box.Err(); err != nil {
		return err
	}
	msg := append([]byte(nil), data...)
	m.wire.sent.Add(int64(len(msg)))
	dst := &m.world.ranks[peer].wire
	if due.IsZero() {
		dst.recv.Add(int64(len(msg)))
		box.Deliver(tag, msg)
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return collective.ErrClosed
	}
	if m.links[peer] == nil {
		// One goroutine per delayed link delivers in send order, each
		// message no earlier than its due time.
		ch := make(chan delayed, 1024)
		m.links[peer] = ch
		go func() {
			for d := range ch {
				time.Sleep(time.Until(d.due))
				dst.recv.Add(int64(len(d.msg)))
				box.Deliver(d.tag, d.msg)
			}
		}()
	}
	m.links[peer] <- delayed{due, tag, msg}
	return nil
}

type delayed struct {
	due time.Time
	tag uint64
	msg []byte
}

// Recv receives the next message from peer under tag into buf.
func (m *Mem) Recv(ctx context.Context, peer int, tag uint64, buf []byte) error {
	if err := m.checkPeer(peer); err != nil {
		return err
	}
	return m.boxes[peer].Recv(ctx, tag, buf)
}

// PostRecv posts a receive of the next message from peer under tag into buf.
func (m *Mem) PostRecv(peer int, tag uint64, buf []byte) (driver.Posted, error) {
	if err := m.checkPeer(peer); err != nil {
		return nil, err
	}
	return m.boxes[peer].Post(tag, buf), nil
}

// PostRecvReduce posts a receive that reduces the next message from peer
// under tag into buf.
func (m *Mem) PostRecvReduce(peer int, tag uint64, buf []byte, red driver.Reduction) (driver.Posted, error) {
	if err := m.checkPeer(peer); err != nil {
		return nil, err
	}
	return m.boxes[peer].PostReduce(tag, buf, red), nil
}

// Abort fails every peer's pending receives from this rank, naming this rank
// and err, and closes this end.
func (m *Mem) Abort(err error) {
	for peer, other := range m.world.ranks {
		if peer == m.rank {
			continue
		}
		aborted := &collective.PeerError{Rank: m.rank, Err: fmt.Errorf("%w: %w", collective.ErrAborted, err)}
		for _, box := range other.boxes {
			box.Fail(aborted)
		}
	}
	m.Close()
}

// Close fails this rank's pending receives and refuses further sends.
func (m *Mem) Close() error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		for _, ch := range m.links {
			if ch != nil {
				close(ch)
			}
		}
	}
	m.mu.Unlock()
	for _, box := range m.boxes {
		box.Fail(collective.ErrClosed)
	}
	return nil
}
