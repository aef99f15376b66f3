package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/wire"
)

// ErrPeerClosed is the cause in the PeerError of a peer that closed its
// transport in an orderly way: it will send nothing more, and a receive that
// waits for it fails at once rather than at its deadline.
var ErrPeerClosed = errors.New("closed its transport")

// TCP is one rank's end of a full TCP mesh: one connection per pair of
// ranks, each opened by the higher rank and authenticated by a handshake.
type TCP struct {
	o       TCPOptions
	addr    string  // our listen address, as published
	peers   []*peer // by rank; nil at our own
	maxMsg  int64
	epoch   time.Time
	egress  *pacer // nil when unshaped
	ingress *pacer
	latency time.Duration
	chunk   int // pacing granularity, bytes

	wg   sync.WaitGroup // readers, heartbeats, delay lines, half-closers
	done chan struct{}  // closed by Close and Abort

	mu        sync.Mutex
	closed    bool
	jobErr    error         // a peer aborted the job: every send fails with this
	jobFailed chan struct{} // closed when jobErr is set
	broken    atomic.Bool   // closed or jobErr is set: sendErr takes mu only then

	// ready: the mesh is built, and every peer's mailbox set. Until then
	// wait queries are answered "blocked on nothing", which is true, and
	// the mailboxes are not read while other goroutines still set them.
	ready atomic.Bool

	// Wait queries this rank has sent and awaits replies to, by id.
	qmu     sync.Mutex
	queries map[uint64]query
	lastQ   uint64

	shutOnce sync.Once

	spinners spinners // with Spin: the socket ends that may park; see spin.go

	wire wireCount // payload bytes sent and received; see wirebytes.go
}

var _ driver.Transport = (*TCP)(nil)

// peer is one connection and everything per peer.
type peer struct {
	t    *TCP
	rank int
	addr string // the peer's published listen address
	host string // the peer's published host identity (driver.Topology)
	box  *Mailbox
	shm  *shmLink // the payload path of a same-host peer; nil: TCP's

	// Set once by attach, before the goroutines that use it start.
	conn   *net.TCPConn
	r      *bufio.Reader
	delay  chan event    // nil without latency; the reader is its only sender
	exited chan struct{} // closed when the reader has returned
	probe  chan struct{} // the reader asks the heartbeat goroutine to probe

	// wmu is the write lock: a channel so that waiting for it can honour a
	// context. Its holder owns the fields below it.
	wmu     chan struct{}
	whdr    [wire.HeaderSize]byte
	vec     [3][]byte
	bufs    net.Buffers
	wclosed bool // our write side is shut

	// With Spin (see spin.go): the socket for raw reads and writes, the
	// reader, and the write side's parking state.
	raw  syscall.RawConn
	dr   *deadlineReader
	wend *spinEnd

	lastWrite atomic.Int64 // ns since t.epoch
	gotBye    atomic.Bool  // the peer sent close or abort: its EOF is orderly
	errp      atomic.Pointer[error]

	// The send in progress, for wait queries: since is its start in mono
	// time, 0 when none. The holder of the write lock sets them.
	sendSince atomic.Int64
	sendTag   atomic.Uint64

	// Wait states to send back to the peer's queries, answered by
	// respond, so that the reader never waits for the write lock.
	answers chan answer
}

// query is a wait query awaiting its reply.
type query struct {
	p  *peer
	ch chan []wire.Wait // buffered: the reader never blocks on it
}

// answer is a wait reply to send.
type answer struct {
	id    uint64
	waits []wire.Wait
}

func (p *peer) describe() string { return fmt.Sprintf("rank %d (%s)", p.rank, p.addr) }

// setErr records why the link is unusable; the first reason wins, and is
// returned.
func (p *peer) setErr(err error) error {
	if p.errp.CompareAndSwap(nil, &err) {
		return err
	}
	return *p.errp.Load()
}

func (p *peer) err() error {
	if e := p.errp.Load(); e != nil {
		return *e
	}
	return nil
}

func (p *peer) peerErr(cause error) *collective.PeerError {
	return &collective.PeerError{Rank: p.rank, Addr: p.addr, Err: cause}
}

func (p *peer) lock(ctx context.Context) error {
	select {
	case p.wmu <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.wmu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.t.done:
		return collective.ErrClosed
	}
}

func (p *peer) lockWithin(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case p.wmu <- struct{}{}:
		return true
	case <-tm.C:
		return false
	}
}

func (p *peer) unlock() { <-p.wmu }

// NewTCP joins the mesh: it listens, publishes its address in the store,
// reads every other rank's, dials the lower ranks, accepts the higher ones,
// authenticates each connection, and returns once it is connected to every
// peer, or fails within ConnectTimeout. A world of one needs no network.
func NewTCP(ctx context.Context, o TCPOptions) (*TCP, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	t := &TCP{
		o:      o,
		peers:  make([]*peer, o.Size),
		maxMsg: o.MaxMessage,
		epoch:  time.Now(),
		done:   make(chan struct{}),

		jobFailed: make(chan struct{}),
	}
	if l := o.Link; l != nil {
		if l.Rate > 0 {
			t.egress, t.ingress = newPacer(l.Rate, o.clock), newPacer(l.Rate, o.clock)
			t.chunk = t.egress.chunk
		}
		t.latency = l.Latency
	}
	if o.Size == 1 {
		return t, nil
	}

	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	ln, err := net.Listen("tcp", net.JoinHostPort(o.ListenHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("transport: rank %d: listen on %s: %w", o.Rank, o.ListenHost, err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	t.addr = net.JoinHostPort(o.AdvertiseHost, strconv.Itoa(port))
	// The host identity first: a peer that finds the address finds it too.
	if err := o.Store.Set(cctx, t.hostKey(o.Rank), []byte(o.HostID)); err != nil {
		return nil, fmt.Errorf("transport: rank %d: publishing host identity: %w", o.Rank, err)
	}
	if err := o.Store.Set(cctx, t.key(o.Rank), []byte(t.addr)); err != nil {
		return nil, fmt.Errorf("transport: rank %d: publishing address %s: %w", o.Rank, t.addr, err)
	}
	for r := range o.Size {
		if r != o.Rank {
			t.peers[r] = &peer{t: t, rank: r, wmu: make(chan struct{}, 1), exited: make(chan struct{}), answers: make(chan answer, maxAnswers)}
		}
	}

	// Lower ranks accept, higher ranks dial: one connection per pair, and
	// no tie to break.
	errs := make(chan error, o.Size)
	var wg sync.WaitGroup
	if o.Rank < o.Size-1 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- t.acceptAll(cctx, ln) }()
	}
	for r := range o.Rank {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- t.dial(cctx, t.peers[r]) }()
	}
	go func() { wg.Wait(); close(errs) }()
	go func() {
		// A peer that gives up on the mesh aborts it: stop waiting for the
		// rest now rather than at ConnectTimeout.
		select {
		case <-t.jobFailed:
			cancel()
		case <-cctx.Done():
		}
	}()
	var first error
	for err := range errs {
		if err != nil && first == nil {
			first = err
			cancel() // the mesh has failed: stop the others now
		}
	}
	if first == nil {
		first = t.setupShm(cctx)
	}
	if first == nil {
		t.ready.Store(true)
	}
	// An abort that arrived while the mesh formed failed no mailbox
	// (peerAborted saw ready false, before the store above) and cut the
	// waits short: it is why the mesh failed. One that arrives after the
	// store fails the mailboxes itself, all of which exist by then.
	t.mu.Lock()
	if t.jobErr != nil {
		first = fmt.Errorf("transport: rank %d: forming the mesh: %w", o.Rank, t.jobErr)
	}
	t.mu.Unlock()
	if first != nil {
		// Abort rather than close, so that the peers already connected
		// learn why this rank left.
		t.shutdown(first)
		return nil, first
	}
	o.Logf("transport: rank %d: connected to %d peers; listening at %s", o.Rank, o.Size-1, t.addr)
	return t, nil
}

func (t *TCP) Rank() int { return t.o.Rank }
func (t *TCP) Size() int { return t.o.Size }

// Addr is this rank's listen address, as published to its peers.
func (t *TCP) Addr() string { return t.addr }

// PeerAddr is the peer's published host:port; this rank's own for its own
// rank, and "" out of range.
func (t *TCP) PeerAddr(peer int) string {
	switch {
	case peer == t.o.Rank:
		return t.addr
	case peer < 0 || peer >= len(t.peers):
		return ""
	}
	return t.peers[peer].addr
}

// HostOf is the host identity rank published (TCPOptions.HostID); every
// rank's is known once the mesh has formed.
func (t *TCP) HostOf(rank int) string {
	switch {
	case rank == t.o.Rank:
		return t.o.HostID
	case rank < 0 || rank >= len(t.peers):
		return ""
	}
	return t.peers[rank].host
}

// PathTo names what carries the payloads to peer: "shm" for a same-host
// pair in shared memory, "tcp" otherwise ("" out of range).
func (t *TCP) PathTo(peer int) string {
	switch {
	case peer < 0 || peer >= len(t.peers) || peer == t.o.Rank:
		return ""
	case t.peers[peer].shm != nil:
		return linkspec.TransportShm
	}
	return linkspec.TransportTCP
}

func (t *TCP) peer(rank int) (*peer, error) {
	if rank < 0 || rank >= t.o.Size || rank == t.o.Rank {
		return nil, collective.Invalidf("transport: peer %d out of range for rank %d of %d", rank, t.o.Rank, t.o.Size)
	}
	return t.peers[rank], nil
}

func (t *TCP) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}
