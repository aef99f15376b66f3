package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/wire"
)

// Defaults for TCPOptions.
const (
	DefaultKeyPrefix         = "transport/addr/"
	DefaultListenHost        = "127.0.0.1"
	DefaultMaxMessage        = 4 << 30
	DefaultConnectTimeout    = 60 * time.Second
	DefaultSocketBuffer      = 4 << 20
	DefaultHeartbeatInterval = 2 * time.Second
	DefaultPeerTimeout       = 30 * time.Second
	DefaultCloseTimeout      = 2 * time.Second
)

// ErrPeerClosed is the cause in the PeerError of a peer that closed its
// transport in an orderly way: it will send nothing more, and a receive that
// waits for it fails at once rather than at its deadline.
var ErrPeerClosed = errors.New("closed its transport")

// TCPOptions configures one rank's end of a TCP mesh. Every rank of a job
// must agree on Size, JobID, Token, MaxMessage, the liveness settings and
// Link.
type TCPOptions struct {
	Rank, Size int
	// Store is the job's rendezvous store, where each rank publishes its
	// listen address under KeyPrefix+rank. Not needed when Size is 1.
	Store     driver.Store
	KeyPrefix string // default DefaultKeyPrefix
	// JobID names the job (at most wire.MaxJobID bytes); a peer of another
	// job is refused.
	JobID string
	// Token is the job's shared secret; the handshake refuses a peer that
	// cannot prove it holds it. Required when Size > 1.
	Token []byte
	// ListenHost is the interface to bind; default 127.0.0.1. The port is
	// chosen by the system.
	ListenHost string
	// AdvertiseHost is the host peers dial; default ListenHost, or the
	// host name when ListenHost is an unspecified address (0.0.0.0, ::).
	AdvertiseHost string
	// MaxMessage bounds one message, sent or received; default
	// DefaultMaxMessage. A larger header from a peer breaks the connection.
	MaxMessage int64
	// ConnectTimeout bounds building the mesh: rendezvous, dialing (with
	// retries), accepting and every handshake. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds one handshake; default wire.DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// SocketBuffer sets each socket's send and receive buffers, in bytes;
	// default DefaultSocketBuffer, negative leaves the system's.
	SocketBuffer int
	// HeartbeatInterval: an idle connection sends a heartbeat this often;
	// default DefaultHeartbeatInterval, negative sends none.
	HeartbeatInterval time.Duration
	// PeerTimeout: a peer that sends nothing, not even a heartbeat, for this
	// long is probed, and declared dead (its receives fail) if it then
	// stays silent for ProbeTimeout more. Default DefaultPeerTimeout;
	// negative never gives up (a stalled peer then stalls its receivers
	// until their own deadlines).
	PeerTimeout time.Duration
	// ProbeTimeout: how long a peer that PeerTimeout found silent has to
	// send anything at all, the probe's answer included, before it is
	// declared dead. Its reader answers a probe at once, a starved process
	// late and a stopped one never. Default twice PeerTimeout.
	ProbeTimeout time.Duration
	// CloseTimeout bounds Close and Abort: how long to wait for peers to
	// acknowledge the goodbye. Default DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Spin, if positive, has each connection's reader poll its socket for
	// up to this long after the last bytes it read before it parks,
	// yielding to the process's other goroutines between polls. It trades a
	// core's time for a lower small-message latency: a waiting rank finds
	// its message without a poller and thread wake-up. Use it only when
	// every process has a core of its own (the local launcher sets it when
	// they do, with GOMAXPROCS at the process's share of the cores); 0 never
	// spins.
	Spin time.Duration
	// Link, if not nil, shapes the traffic as a NIC of that rate and
	// latency would; see Link.
	Link *Link
	// Logf, if set, receives diagnostic lines.
	Logf func(format string, args ...any)

	// clock, in tests, is the link shaper's virtual time; nil is real time.
	clock clock
}

func (o *TCPOptions) setDefaults() {
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.ListenHost == "" {
		o.ListenHost = DefaultListenHost
	}
	if o.AdvertiseHost == "" {
		o.AdvertiseHost = o.ListenHost
		if ip := net.ParseIP(o.ListenHost); ip != nil && ip.IsUnspecified() {
			if h, err := os.Hostname(); err == nil {
				o.AdvertiseHost = h
			}
		}
	}
	if o.MaxMessage == 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = wire.DefaultHandshakeTimeout
	}
	if o.SocketBuffer == 0 {
		o.SocketBuffer = DefaultSocketBuffer
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.PeerTimeout == 0 {
		o.PeerTimeout = DefaultPeerTimeout
	}
	if o.ProbeTimeout == 0 && o.PeerTimeout > 0 {
		o.ProbeTimeout = 2 * o.PeerTimeout
	}
	if o.CloseTimeout == 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
}

// Validate checks the options, with defaults applied, before any network is
// touched.
func (o *TCPOptions) Validate() error {
	c := *o
	c.setDefaults()
	switch {
	case c.Size < 1 || c.Size > wire.MaxWorldSize:
		return fmt.Errorf("transport: world size %d out of range (accepted: 1..%d)", c.Size, wire.MaxWorldSize)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("transport: rank %d out of range for world size %d (accepted: 0..%d)", c.Rank, c.Size, c.Size-1)
	case len(c.JobID) > wire.MaxJobID:
		return fmt.Errorf("transport: job id of %d bytes exceeds the %d-byte limit", len(c.JobID), wire.MaxJobID)
	case c.MaxMessage < 0:
		return fmt.Errorf("transport: negative MaxMessage %d", c.MaxMessage)
	case c.ConnectTimeout < 0 || c.HandshakeTimeout < 0 || c.CloseTimeout < 0 || c.ProbeTimeout < 0:
		return fmt.Errorf("transport: negative timeout (connect %v, handshake %v, close %v, probe %v)", c.ConnectTimeout, c.HandshakeTimeout, c.CloseTimeout, c.ProbeTimeout)
	case c.PeerTimeout > 0 && c.HeartbeatInterval > 0 && c.PeerTimeout < 2*c.HeartbeatInterval:
		return fmt.Errorf("transport: PeerTimeout %v must be at least twice HeartbeatInterval %v, or a live but idle peer is declared dead", c.PeerTimeout, c.HeartbeatInterval)
	}
	if c.Link != nil {
		if err := c.Link.Validate(); err != nil {
			return err
		}
	}
	if c.Size == 1 {
		return nil
	}
	switch {
	case c.Store == nil:
		return fmt.Errorf("transport: world size %d needs a rendezvous store (TCPOptions.Store)", c.Size)
	case len(c.Token) == 0:
		return errors.New("transport: empty job token (TCPOptions.Token); every rank of a job must share a non-empty secret, so that a stray or hostile peer is refused")
	}
	return nil
}

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
}

var _ driver.Transport = (*TCP)(nil)

// peer is one connection and everything per peer.
type peer struct {
	t    *TCP
	rank int
	addr string // the peer's published listen address
	box  *Mailbox

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

func (t *TCP) key(rank int) string { return t.o.KeyPrefix + strconv.Itoa(rank) }

// resolve reads p's published address. Each dialer and each accepted
// connection resolves its own peer, so that a rank that never publishes
// delays only its own link, and a handshake that fails fast is not stuck
// behind it.
func (t *TCP) resolve(ctx context.Context, p *peer) error {
	v, err := t.o.Store.Get(ctx, t.key(p.rank))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = &collective.TimeoutError{After: time.Since(t.epoch), Waiting: fmt.Sprintf("rank %d to publish its address (store key %q)", p.rank, t.key(p.rank))}
		}
		return fmt.Errorf("transport: rank %d: %w", t.o.Rank, err)
	}
	addr := string(v)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("transport: rank %d: rank %d published a bad address %q (store key %q): %v", t.o.Rank, p.rank, addr, t.key(p.rank), err)
	}
	p.addr = addr
	p.box = NewMailbox(p.describe())
	return nil
}

func (t *TCP) handshakeConfig() wire.HandshakeConfig {
	return wire.HandshakeConfig{JobID: t.o.JobID, Token: t.o.Token, Rank: t.o.Rank, Size: t.o.Size, Timeout: t.o.HandshakeTimeout}
}

// maxHandshakes bounds the handshakes one rank runs at once while it
// accepts its higher peers, and so the sockets and goroutines that
// connections which never finish a handshake can hold.
const maxHandshakes = 64

// acceptAll accepts until every higher rank has connected. Each connection
// is authenticated on its own goroutine, under its own handshake deadline.
// Strays and failed handshakes are refused and logged, and do not stop it: a
// hostile connection must not be able to break the mesh. When maxHandshakes
// are in progress, a new connection closes the oldest one not yet admitted:
// strangers that connect and say nothing cannot keep a rank out, since a
// genuine peer's handshake takes a round trip and a closed dialer retries.
func (t *TCP) acceptAll(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	// Once every peer is connected, the handshakes still in progress are
	// strangers': hctx ends them rather than wait out their deadlines.
	hctx, endHandshakes := context.WithCancel(ctx)
	defer endHandshakes()

	type handshake struct {
		c       net.Conn
		evicted bool // closed to make room for a newer connection
	}
	var (
		mu        sync.Mutex
		pending   = map[int]bool{} // higher ranks not yet admitted
		connected int              // peers admitted and attached
		want      = t.o.Size - 1 - t.o.Rank
		active    []*handshake // in progress and not yet admitted, oldest first
		refused   refusals
		hs        sync.WaitGroup
	)
	for r := t.o.Rank + 1; r < t.o.Size; r++ {
		pending[r] = true
	}
	// retire takes h off active; under mu.
	retire := func(h *handshake) {
		if i := slices.Index(active, h); i >= 0 {
			active = slices.Delete(active, i, i+1)
		}
	}
	admit := func(h *handshake, r int) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case h.evicted:
			return fmt.Errorf("%w: closed to make room for newer connections", wire.ErrHandshake)
		case r < t.o.Rank:
			return fmt.Errorf("%w: rank %d dialed rank %d, but lower ranks accept and higher ranks dial", wire.ErrRankMismatch, r, t.o.Rank)
		case !pending[r]:
			return fmt.Errorf("%w: rank %d is already connected to rank %d", wire.ErrRankMismatch, r, t.o.Rank)
		}
		delete(pending, r)
		retire(h) // an admitted peer is not evicted
		return nil
	}
	var acceptErr error
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				mu.Lock()
				done := connected == want
				mu.Unlock()
				if !done {
					acceptErr = err
				}
			}
			break
		}
		h := &handshake{c: c}
		mu.Lock()
		if len(active) >= maxHandshakes {
			oldest := active[0]
			active = active[1:]
			oldest.evicted = true
			oldest.c.Close()
			refused.evicted++
			t.o.Logf("transport: rank %d: closed the handshake of %s to make room: %d handshakes in progress", t.o.Rank, oldest.c.RemoteAddr(), maxHandshakes)
		}
		active = append(active, h)
		mu.Unlock()
		hs.Add(1)
		go func() {
			defer hs.Done()
			var admitted = -1
			rank, err := wire.ServerHandshake(hctx, c, t.handshakeConfig(), func(r int) error {
				if err := admit(h, r); err != nil {
					return err
				}
				admitted = r
				return nil
			})
			if err != nil {
				c.Close()
				mu.Lock()
				retire(h)
				if admitted >= 0 {
					pending[admitted] = true // the accept record did not get through
				}
				evicted := h.evicted // counted already
				if !evicted {
					refused.add(err)
				}
				mu.Unlock()
				if !evicted {
					t.o.Logf("transport: rank %d: refused a connection: %v", t.o.Rank, err)
				}
				return
			}
			// It published before it dialed: this does not wait.
			if err := t.resolve(ctx, t.peers[rank]); err != nil {
				c.Close()
				mu.Lock()
				pending[rank] = true
				refused.add(err)
				mu.Unlock()
				return
			}
			t.attach(t.peers[rank], c.(*net.TCPConn))
			mu.Lock()
			connected++
			done := connected == want
			mu.Unlock()
			if done {
				ln.Close()
				endHandshakes()
			}
		}()
	}
	hs.Wait()
	mu.Lock()
	defer mu.Unlock()
	if connected == want {
		return nil
	}
	var missing []int
	for r := range pending {
		missing = append(missing, r)
	}
	slices.Sort(missing)
	ranks := rankList(missing)
	var why error = &collective.TimeoutError{After: time.Since(t.epoch), Waiting: fmt.Sprintf("ranks %s to connect to %s", ranks, t.addr)}
	if acceptErr != nil {
		why = fmt.Errorf("accepting on %s: %w", t.addr, acceptErr)
	} else if ctx.Err() == context.Canceled {
		why = fmt.Errorf("gave up waiting for ranks %s to connect: %w", ranks, ctx.Err())
	}
	return fmt.Errorf("transport: rank %d: %w%s", t.o.Rank, why, refused.summary())
}

// refusals counts the connections acceptAll refused, for its error: a
// count and two reasons, not a list, so that a flood of strangers cannot
// make that one line long. The first reason from a peer that named a rank
// is kept apart: a misconfigured rank, more use than a stranger's.
type refusals struct {
	n, evicted      int
	first, fromRank string
}

// maxReason bounds each reason that refusals keeps.
const maxReason = 300

func (r *refusals) add(err error) {
	r.n++
	text := wire.Sanitize(err.Error(), maxReason)
	if r.first == "" {
		r.first = text
	}
	var he *wire.HandshakeError
	if r.fromRank == "" && errors.As(err, &he) && strings.HasPrefix(he.Peer, "rank ") {
		r.fromRank = text
	}
}

// summary is what the error says about the refusals, "" if there were none.
func (r *refusals) summary() string {
	var b strings.Builder
	if r.n > 0 {
		fmt.Fprintf(&b, "; refused %d connection(s), the first: %s", r.n, r.first)
		if r.fromRank != "" && r.fromRank != r.first {
			fmt.Fprintf(&b, "; the first from a rank: %s", r.fromRank)
		}
	}
	if r.evicted > 0 {
		fmt.Fprintf(&b, "; closed %d connection(s) that had not finished the handshake, to make room (at most %d at once)", r.evicted, maxHandshakes)
	}
	return b.String()
}

// rankList writes ranks as "[1 2 3]", eliding the middle of a long list.
func rankList(ranks []int) string {
	const most = 16
	if len(ranks) <= most {
		return fmt.Sprint(ranks)
	}
	return fmt.Sprintf("%v … %v (%d in all)", ranks[:most/2], ranks[len(ranks)-most/2:], len(ranks))
}

// dial connects to a lower rank, retrying refused or failed dials until the
// connect deadline: the peer may still be starting. A handshake that fails
// is final; the reason is in the error.
func (t *TCP) dial(ctx context.Context, p *peer) error {
	if err := t.resolve(ctx, p); err != nil {
		return err
	}
	backoff := 10 * time.Millisecond
	var last error
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", p.addr)
		if err == nil {
			err = wire.ClientHandshake(ctx, c, t.handshakeConfig(), p.rank)
			if err == nil {
				t.attach(p, c.(*net.TCPConn))
				return nil
			}
			c.Close()
			// Closed without a reason: the peer may have shed this
			// handshake to a flood of connections (see acceptAll).
			if !errors.Is(err, wire.ErrPeerClosed) || ctx.Err() != nil {
				return fmt.Errorf("transport: rank %d: %w", t.o.Rank, err) // it names the peer
			}
		}
		last = err
		tm := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			tm.Stop()
			if ctx.Err() == context.Canceled {
				return fmt.Errorf("transport: rank %d: gave up dialing %s: %w (last error: %v)", t.o.Rank, p.describe(), ctx.Err(), last)
			}
			return fmt.Errorf("transport: rank %d: %w (last error: %v)", t.o.Rank,
				&collective.TimeoutError{After: time.Since(t.epoch), Waiting: "a connection to " + p.describe()}, last)
		case <-tm.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// attach sets up an authenticated connection and starts its goroutines.
func (t *TCP) attach(p *peer, c *net.TCPConn) {
	c.SetNoDelay(true) // our frames are whole messages; never wait to coalesce
	if n := t.o.SocketBuffer; n > 0 {
		c.SetReadBuffer(n)
		c.SetWriteBuffer(n)
	}
	p.conn = c
	p.probe = make(chan struct{}, 1)
	dr := &deadlineReader{c: c, p: p, timeout: t.o.PeerTimeout, probeTimeout: t.o.ProbeTimeout, spin: t.o.Spin}
	if t.o.Spin > 0 {
		t.setupSpin(p, dr)
	}
	p.dr = dr
	p.r = bufio.NewReaderSize(dr, 64<<10)
	p.lastWrite.Store(int64(time.Since(t.epoch)))
	if t.latency > 0 {
		p.delay = make(chan event, 4096)
		t.wg.Add(1)
		go t.delayLine(p)
	}
	t.wg.Add(1)
	go t.readLoop(p)
	if t.o.HeartbeatInterval > 0 || t.o.PeerTimeout > 0 {
		t.wg.Add(1)
		go t.heartbeat(p)
	}
	t.wg.Add(1)
	go t.respond(p)
}

// deadlineReader pushes the read deadline out as bytes arrive, so a large
// message may take as long as it needs while a silent peer is caught. A
// deadline is when this rank looks at the peer, not yet a verdict: see
// silent.
type deadlineReader struct {
	c            *net.TCPConn
	p            *peer
	timeout      time.Duration // PeerTimeout; <= 0: none
	probeTimeout time.Duration
	set          time.Time // when the deadline was last pushed
	probed       time.Time // when the silent peer was probed; zero if it was not

	// With Spin (see spin.go; nil raw: never spins). Used by the reader
	// goroutine only, except end's atomics.
	spin        time.Duration
	raw         syscall.RawConn
	end         *spinEnd
	spinners    *spinners
	activeUntil int64 // unix ns: poll instead of parking until then
	nextLook    int64 // unix ns: when to next yield and look at parked sockets
}

func (d *deadlineReader) Read(b []byte) (int, error) {
	var start time.Time // when this read began to wait
	for {
		if d.timeout > 0 {
			// Pushing the deadline costs a little; doing it every eighth
			// of the timeout is enough, since silent measures the
			// silence itself.
			now := time.Now()
			if start.IsZero() {
				start = now
			}
			if d.probed.IsZero() && now.Sub(d.set) > d.timeout/8 {
				d.set = now
				d.c.SetReadDeadline(now.Add(d.timeout))
			}
		}
		var n int
		var err error
		if d.raw != nil && len(b) > 0 {
			n, err = d.spinRead(b)
		} else {
			n, err = d.c.Read(b)
		}
		if d.end.wasKicked(err) {
			d.set = time.Time{} // restore the deadline on the next pass
			if d.timeout <= 0 {
				d.c.SetReadDeadline(time.Time{})
			} else if !d.probed.IsZero() {
				d.c.SetReadDeadline(d.probed.Add(d.probeTimeout))
			}
			continue
		}
		if n > 0 {
			raceReceived()
			if !d.probed.IsZero() {
				d.heard(start)
			}
		}
		if err != nil && d.timeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			if err = d.silent(start); err == nil {
				continue
			}
		}
		return n, err
	}
}

// silent decides what a read deadline means, for a read that began to wait
// at start. Bytes waiting in the socket mean that this rank was late (starved,
// or stopped, itself), not the peer. A peer silent for PeerTimeout is
// probed; one that stays silent for ProbeTimeout after that is declared dead.
// A starved process answers late; only a stopped, hung or cut-off one never
// does. It returns nil to read on.
func (d *deadlineReader) silent(start time.Time) error {
	now := time.Now()
	switch {
	case bytesWaiting(d.c):
		d.set = time.Time{}
		if !d.probed.IsZero() {
			d.c.SetReadDeadline(now.Add(d.probeTimeout))
		}
	case d.probed.IsZero() && now.Sub(start) < d.timeout:
		// The deadline was pushed before this read began.
		d.set = now
		d.c.SetReadDeadline(start.Add(d.timeout))
	case d.probed.IsZero():
		d.probed = now
		d.p.t.o.Logf("transport: rank %d: %s has sent nothing for %v; probing it", d.p.t.o.Rank, d.p.describe(), now.Sub(start).Round(time.Millisecond))
		select {
		case d.p.probe <- struct{}{}:
		default:
		}
		d.c.SetReadDeadline(now.Add(d.probeTimeout))
	case now.Sub(d.probed) < d.probeTimeout:
		d.c.SetReadDeadline(d.probed.Add(d.probeTimeout))
	default:
		return &silenceError{silence: now.Sub(start), probedAfter: d.probed.Sub(start), probeTimeout: d.probeTimeout}
	}
	return nil
}

// heard ends a probe: the peer has sent something, so it is alive.
func (d *deadlineReader) heard(start time.Time) {
	d.p.t.o.Logf("transport: rank %d: %s sent again after %v of silence: slow, not dead", d.p.t.o.Rank, d.p.describe(), time.Since(start).Round(time.Millisecond))
	d.probed, d.set = time.Time{}, time.Time{}
}

// silenceError is a peer declared dead: silent for PeerTimeout, then for
// ProbeTimeout after a probe.
type silenceError struct {
	silence, probedAfter, probeTimeout time.Duration
}

func (e *silenceError) Error() string {
	return fmt.Sprintf("sent nothing for %v, nor answered a probe within %v", e.silence.Round(time.Millisecond), e.probeTimeout)
}

// sawData keeps the reader polling for Spin after a data frame (not after a
// heartbeat: a link that carries only heartbeats should not spin).
func (d *deadlineReader) sawData() {
	if d.raw != nil {
		d.activeUntil = time.Now().Add(d.spin).UnixNano()
	}
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

func (t *TCP) peer(rank int) (*peer, error) {
	if rank < 0 || rank >= t.o.Size || rank == t.o.Rank {
		return nil, collective.Invalidf("transport: peer %d out of range for rank %d of %d", rank, t.o.Rank, t.o.Size)
	}
	return t.peers[rank], nil
}

// sendErr is why a send to p cannot start, or nil.
func (t *TCP) sendErr(p *peer) error {
	t.mu.Lock()
	closed, jobErr := t.closed, t.jobErr
	t.mu.Unlock()
	switch {
	case closed:
		return collective.ErrClosed
	case jobErr != nil:
		return jobErr
	}
	return p.err()
}

func (t *TCP) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Send writes one frame: header and payload in one writev, with no copy of
// data. It returns once the kernel has the bytes. Its deadline is ctx's
// (collective.DefaultTimeout if ctx has none).
func (t *TCP) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	p, err := t.peer(peer)
	if err != nil {
		return err
	}
	if int64(len(data)) > t.maxMsg {
		return collective.Invalidf("transport: message of %d bytes to %s exceeds the %d-byte limit (TCPOptions.MaxMessage)", len(data), p.describe(), t.maxMsg)
	}
	if err := t.sendErr(p); err != nil {
		return err
	}
	start := time.Now()
	if err := p.lock(ctx); err != nil {
		return t.sendFailed(ctx, p, err, 0, start, len(data), tag)
	}
	defer p.unlock()
	if err := t.sendErr(p); err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = start.Add(collective.DefaultTimeout)
	}
	h := wire.Header{Kind: wire.KindData, Tag: tag, Length: uint64(len(data))}
	p.sendTag.Store(tag)
	p.sendSince.Store(mono(start))
	var n int64
	if t.egress != nil {
		n, err = t.writeShaped(ctx, p, h, data, deadline)
	} else {
		n, err = p.writeLocked(h, data, deadline)
	}
	p.sendSince.Store(0)
	if err != nil {
		return t.sendFailed(ctx, p, err, n, start, len(data), tag)
	}
	p.lastWrite.Store(int64(time.Since(t.epoch)))
	return nil
}

// writeLocked writes a whole frame (header, payload, padding) in one writev;
// the caller holds the write lock.
func (p *peer) writeLocked(h wire.Header, payload []byte, deadline time.Time) (int64, error) {
	return p.writeFramed(&h, payload, wire.PadLen(uint64(len(payload))), deadline)
}

// writeFramed writes the header h (none if nil), then payload, then pad zero
// bytes, in one writev; the caller holds the write lock.
func (p *peer) writeFramed(h *wire.Header, payload []byte, pad int, deadline time.Time) (int64, error) {
	p.conn.SetWriteDeadline(deadline)
	p.bufs = p.vec[:0]
	if h != nil {
		h.Encode(&p.whdr)
		p.bufs = append(p.bufs, p.whdr[:])
	}
	if len(payload) > 0 {
		p.bufs = append(p.bufs, payload)
	}
	if pad > 0 {
		p.bufs = append(p.bufs, zeros[:pad])
	}
	n, err := p.writeBufs(p.bufs, deadline)
	clear(p.vec[:]) // do not keep the caller's buffer alive
	return n, err
}

// writeControl writes a control frame (heartbeat, wait query or reply); the
// caller holds the write lock. A frame cut short has broken the stream, so
// the connection is dropped; other failures are the reader's to report.
func (t *TCP) writeControl(p *peer, what string, h wire.Header, payload []byte, deadline time.Time) error {
	n, err := p.writeLocked(h, payload, deadline)
	switch {
	case err == nil:
		p.lastWrite.Store(int64(time.Since(t.epoch)))
	case n > 0:
		p.setErr(p.peerErr(fmt.Errorf("%s stopped after %d bytes (%v); the connection was dropped", what, n, err)))
		p.conn.Close()
	}
	return err
}

// zeros pads frames to wire.FrameAlign.
var zeros [wire.FrameAlign]byte

// writeBufs writes bufs in one writev where it can, spinning while the
// socket is full when Spin is set; the caller holds the write lock and has
// set the write deadline.
func (p *peer) writeBufs(bufs net.Buffers, deadline time.Time) (int64, error) {
	raceSent(bufs)
	if p.raw != nil {
		return p.writeSpin(bufs, deadline)
	}
	return bufs.WriteTo(p.conn)
}

// writeShaped writes a frame a chunk at a time, each when the egress pacer
// says its serialization has ended.
func (t *TCP) writeShaped(ctx context.Context, p *peer, h wire.Header, data []byte, deadline time.Time) (int64, error) {
	t.egress.begin()
	defer t.egress.end()
	first := min(len(data), t.chunk)
	if err := t.egress.wait(ctx, t.done, wire.HeaderSize+first, false); err != nil {
		return 0, err
	}
	pad := wire.PadLen(uint64(len(data)))
	last := func(end int) int { // the padding goes out with the last piece
		if end == len(data) {
			return pad
		}
		return 0
	}
	n, err := p.writeFramed(&h, data[:first], last(first), deadline)
	for off := first; err == nil && off < len(data); {
		c := min(len(data)-off, t.chunk)
		if err = t.egress.wait(ctx, t.done, c, false); err != nil {
			break
		}
		var m int64
		m, err = p.writeFramed(nil, data[off:off+c], last(off+c), deadline)
		n += m
		off += c
	}
	return n, err
}

// sendFailed turns a failed send into the error it returns. A send that
// wrote part of a frame has broken the stream: the connection is dropped.
func (t *TCP) sendFailed(ctx context.Context, p *peer, err error, n int64, start time.Time, size int, tag uint64) error {
	total := int64(wire.FrameSize(uint64(size)))
	if n > 0 && n < total {
		cause := fmt.Errorf("a send of %d bytes (tag %d) stopped after %d bytes (%v); the connection was dropped", size, tag, n, err)
		p.setErr(p.peerErr(cause))
		p.conn.Close() // the reader sees it and fails the mailbox
	}
	switch {
	case errors.Is(err, collective.ErrClosed):
		return collective.ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return &collective.TimeoutError{After: time.Since(start), Waiting: fmt.Sprintf("%s to take %d bytes (tag %d)", p.describe(), size, tag)}
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("sending %d bytes (tag %d) to %s: %w", size, tag, p.describe(), err)
	}
	// The connection failed. The reader usually knows why (the peer said
	// goodbye, or reset): give it a moment to say so.
	tm := time.NewTimer(200 * time.Millisecond)
	select {
	case <-p.exited:
	case <-tm.C:
	}
	tm.Stop()
	if le := t.sendErr(p); le != nil {
		return le
	}
	perr := p.setErr(p.peerErr(t.describeNetErr(err)))
	p.conn.Close()
	return perr
}

// Recv receives the next message from peer under tag into buf. A timeout
// is a *collective.TimeoutError naming the peer; a failed peer, a
// *collective.PeerError.
func (t *TCP) Recv(ctx context.Context, peer int, tag uint64, buf []byte) error {
	p, err := t.peer(peer)
	if err != nil {
		return err
	}
	return p.box.Recv(ctx, tag, buf)
}

// PostRecv posts a receive of the next message from peer under tag into buf;
// the returned receive's Wait completes it. See Mailbox.Post.
func (t *TCP) PostRecv(peer int, tag uint64, buf []byte) (driver.Posted, error) {
	p, err := t.peer(peer)
	if err != nil {
		return nil, err
	}
	return posted{p.box, p.box.Post(tag, buf)}, nil
}

// PostRecvReduce posts a receive that reduces the next message from peer
// under tag into buf as it is read; see driver.ReducePoster.
func (t *TCP) PostRecvReduce(peer int, tag uint64, buf []byte, red driver.Reduction) (driver.Posted, error) {
	p, err := t.peer(peer)
	if err != nil {
		return nil, err
	}
	return posted{p.box, p.box.PostReduce(tag, buf, red)}, nil
}

// readLoop reads frames from one peer until the connection ends.
func (t *TCP) readLoop(p *peer) {
	defer t.wg.Done()
	err := t.readFrames(p)
	switch {
	case t.isClosed():
		// Our own Close or Abort: the mailboxes already say so.
	case p.gotBye.Load():
		// The end that the goodbye frame announced.
	default:
		perr := p.setErr(p.peerErr(t.describeNetErr(err)))
		t.o.Logf("transport: rank %d: lost %s: %v", t.o.Rank, p.describe(), perr)
		p.after(func() { p.box.Fail(perr) })
	}
	p.dr.end.retire()
	p.wend.retire()
	p.conn.Close()
	if p.delay != nil {
		close(p.delay)
	}
	close(p.exited)
}

func (t *TCP) readFrames(p *peer) error {
	var hb [wire.HeaderSize]byte
	for {
		if _, err := io.ReadFull(p.r, hb[:]); err != nil {
			return err
		}
		h, err := wire.DecodeHeader(&hb, uint64(t.maxMsg))
		if err != nil {
			return fmt.Errorf("protocol error: %w", err)
		}
		if t.ingress != nil {
			t.ingress.begin()
			t.ingress.waitHeader(t.done, h.Length)
		}
		err = t.handleFrame(p, h)
		if t.ingress != nil {
			t.ingress.end()
		}
		if err != nil {
			return err
		}
		if pad := wire.PadLen(h.Length); pad > 0 {
			if _, err := p.r.Discard(pad); err != nil {
				return err
			}
		}
	}
}

// handleFrame acts on one frame whose header has been read.
func (t *TCP) handleFrame(p *peer, h wire.Header) error {
	switch h.Kind {
	case wire.KindHeartbeat:
	case wire.KindData:
		return t.readData(p, h)
	case wire.KindClose:
		p.gotBye.Store(true)
		perr := p.setErr(p.peerErr(ErrPeerClosed))
		p.after(func() { p.box.Fail(perr) })
		t.answerBye(p)
	case wire.KindAbort:
		var text [wire.MaxAbortText]byte
		if _, err := io.ReadFull(p.r, text[:h.Length]); err != nil {
			return err
		}
		p.gotBye.Store(true)
		t.peerAborted(p, wire.Sanitize(string(text[:h.Length]), wire.MaxAbortText))
		t.answerBye(p)
	case wire.KindWaitQuery:
		// The state as of now, answered by respond: the reader must not
		// wait for the write lock, which a send to this peer may hold
		// while the peer's reader waits for ours.
		select {
		case p.answers <- answer{h.Tag, t.waitState()}:
		default:
			// A flood of queries; the asker's deadline covers any dropped.
		}
	case wire.KindWaitReply:
		var b [wire.MaxWaits * wire.WaitSize]byte
		if _, err := io.ReadFull(p.r, b[:h.Length]); err != nil {
			return err
		}
		ws, err := wire.DecodeWaits(b[:h.Length])
		if err != nil {
			return fmt.Errorf("protocol error: %w", err)
		}
		t.qmu.Lock()
		q, ok := t.queries[h.Tag]
		t.qmu.Unlock()
		if ok && q.p == p {
			select {
			case q.ch <- ws:
			default: // a duplicate reply
			}
		}
	}
	return nil
}

// readData reads one message's payload: straight into a posted receive's
// buffer when there is one (no copy), into fresh memory for the unexpected
// queue otherwise.
func (t *TCP) readData(p *peer, h wire.Header) error {
	size := int(h.Length)
	if t.isClosed() {
		return t.readPayload(p, nil, size)
	}
	if p.delay != nil {
		// With latency, a message is matched when it becomes visible,
		// not when it is read, or a later message could be matched
		// ahead of one still in the delay line; so it waits in fresh
		// memory.
		data := make([]byte, size)
		if err := t.readPayload(p, data, size); err != nil {
			return err
		}
		p.after(func() { p.box.Deliver(h.Tag, data) })
		return nil
	}
	p.dr.sawData()
	defer p.dr.sawData()
	if pd := p.box.Claim(h.Tag, size); pd != nil {
		return t.readInto(p, pd, nil, 0, size)
	}
	if size <= claimChunk {
		data := make([]byte, size)
		if err := t.readPayload(p, data, size); err != nil {
			return err
		}
		p.box.Deliver(h.Tag, data)
		return nil
	}
	return t.readUnexpected(p, h.Tag, size)
}

// claimChunk: a large message that arrives before its receive is read a
// chunk at a time, looking between chunks for a receive posted meanwhile.
// A stream whose receiver re-posts a moment after each message (the usual
// case) then still lands in place, instead of going through fresh memory
// and a copy.
const claimChunk = 256 << 10

// stagingSize is how much of a large unexpected message is read into a
// pooled buffer before the reader gives up waiting for a receive and
// allocates the message's own memory.
const stagingSize = 4 << 20

var staging = sync.Pool{New: func() any { b := make([]byte, stagingSize); return &b }}

// readUnexpected reads a large message that no receive was waiting for.
func (t *TCP) readUnexpected(p *peer, tag uint64, size int) error {
	sp := staging.Get().(*[]byte)
	defer staging.Put(sp)
	var data []byte // the message's own memory, once staging is not enough
	for got := 0; got < size; {
		if pd := p.box.Claim(tag, size); pd != nil {
			have := *sp
			if data != nil {
				have = data
			}
			return t.readInto(p, pd, have[:got], got, size)
		}
		c := min(claimChunk, size-got)
		if data == nil && got+c > stagingSize {
			data = make([]byte, size)
			copy(data, (*sp)[:got])
		}
		dst := *sp
		if data != nil {
			dst = data
		}
		if err := t.readPayload(p, dst[got:got+c], c); err != nil {
			return err
		}
		got += c
	}
	if data == nil { // all of it fitted in staging
		data = append([]byte(nil), (*sp)[:size]...)
	}
	p.box.Deliver(tag, data)
	return nil
}

// readInto completes a claimed receive with a size-byte message of which
// the first len(head) bytes, got, have been read already.
func (t *TCP) readInto(p *peer, pd *Pending, head []byte, got, size int) error {
	defer p.box.Filled(pd)
	if len(pd.Buf) != size {
		err := t.readPayload(p, nil, size-got)
		pd.Complete(MismatchFor(pd, size))
		return err
	}
	pd.Absorb(0, head)
	var err error
	if pd.Reduces() {
		err = t.readReduce(p, pd, got, size)
	} else {
		err = t.readPayload(p, pd.Buf[got:], size-got)
	}
	if err != nil {
		if t.isClosed() {
			pd.Complete(collective.ErrClosed)
		} else {
			pd.Complete(p.setErr(p.peerErr(t.describeNetErr(err))))
		}
		return err
	}
	pd.Complete(nil)
	return nil
}

// readReduce reduces the message's bytes from off to size into pd.Buf a
// read buffer at a time, straight out of the buffered reader: the bytes go
// from the kernel into the reader's buffer, which stays in cache, and from
// there into Buf, with no staging buffer and no second pass over memory.
func (t *TCP) readReduce(p *peer, pd *Pending, off, size int) error {
	elem := pd.Elem()
	piece := p.r.Size() / elem * elem
	for off < size {
		n := min(size-off, piece)
		b, err := p.r.Peek(n)
		if err != nil {
			return err
		}
		pd.Absorb(off, b)
		p.r.Discard(n)
		if t.ingress != nil {
			t.ingress.wait(context.Background(), t.done, n, true)
		}
		off += n
	}
	return nil
}

// readPayload reads size bytes into buf, or discards them when buf is nil,
// at the ingress rate when shaped.
func (t *TCP) readPayload(p *peer, buf []byte, size int) error {
	if buf != nil && t.ingress == nil {
		_, err := io.ReadFull(p.r, buf)
		return err
	}
	if buf == nil && t.ingress == nil {
		_, err := io.CopyN(io.Discard, p.r, int64(size))
		return err
	}
	var scratch []byte
	for off := 0; off < size; {
		c := min(size-off, t.chunk)
		var err error
		if buf != nil {
			_, err = io.ReadFull(p.r, buf[off:off+c])
		} else {
			if scratch == nil {
				scratch = make([]byte, t.chunk)
			}
			_, err = io.ReadFull(p.r, scratch[:c])
		}
		if err != nil {
			return err
		}
		t.ingress.wait(context.Background(), t.done, c, true)
		off += c
	}
	return nil
}

// peerAborted fails the whole job: every receive, from every peer, and every
// send, with an error that names the peer that aborted and why.
func (t *TCP) peerAborted(p *peer, text string) {
	perr := p.peerErr(fmt.Errorf("%w: %s", collective.ErrAborted, text))
	p.setErr(perr)
	t.mu.Lock()
	if t.jobErr == nil {
		t.jobErr = perr
		close(t.jobFailed)
	}
	t.mu.Unlock()
	t.o.Logf("transport: rank %d: %v", t.o.Rank, perr)
	if !t.ready.Load() {
		// The mesh is still forming and some mailboxes may not exist yet:
		// NewTCP sees jobFailed and fails with perr instead.
		return
	}
	p.after(func() {
		for _, q := range t.peers {
			if q != nil {
				q.box.Fail(perr)
			}
		}
	})
}

// answerBye shuts our side of a connection whose peer said goodbye, once any
// send in progress has finished, so that its reader sees EOF and its Close
// returns without waiting out its timeout.
func (t *TCP) answerBye(p *peer) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if !p.lockWithin(t.o.CloseTimeout) {
			p.conn.Close()
			return
		}
		if !p.wclosed {
			p.wclosed = true
			p.conn.CloseWrite()
		}
		p.unlock()
	}()
}

// event is an entry in a link's delay line.
type event struct {
	due time.Time
	fn  func()
}

// after runs fn when the link's latency has passed, in order with the
// link's other events; at once on an unshaped link. Only the reader calls it.
func (p *peer) after(fn func()) {
	if p.delay == nil {
		fn()
		return
	}
	now := time.Now()
	if c := p.t.o.clock; c != nil {
		now = c.now()
	}
	select {
	case p.delay <- event{now.Add(p.t.latency), fn}:
	case <-p.t.done:
		fn()
	}
}

// delayLine runs a link's events at their due times. Due times only grow
// (reads are in order, the latency is fixed), so a FIFO is a delay line.
func (t *TCP) delayLine(p *peer) {
	defer t.wg.Done()
	for d := range p.delay {
		if c := t.o.clock; c != nil {
			c.sleepUntil(context.Background(), t.done, d.due)
		} else {
			sleepUntilExactly(t.done, d.due)
		}
		d.fn()
	}
}

// heartbeat keeps an idle connection visibly alive, and probes the peer
// when the reader asks.
func (t *TCP) heartbeat(p *peer) {
	defer t.wg.Done()
	every := t.o.HeartbeatInterval
	var tick <-chan time.Time // nil, which never fires, without heartbeats
	if every > 0 {
		tk := time.NewTicker(every / 2)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-t.done:
			return
		case <-p.exited:
			return
		case <-p.probe:
			t.sendProbe(p)
			continue
		case <-tick:
		}
		if time.Since(t.epoch)-time.Duration(p.lastWrite.Load()) < every/2 {
			continue
		}
		select {
		case p.wmu <- struct{}{}:
		default:
			continue // a send is writing: that is a sign of life too
		}
		if p.err() == nil && !p.wclosed {
			t.writeControl(p, "a heartbeat", wire.Header{Kind: wire.KindHeartbeat}, nil, time.Now().Add(every))
		}
		p.unlock()
	}
}

// probeID is the wait query id of a probe, which no diagnosis uses: the
// reply only shows that the peer is alive.
const probeID = 0

// sendProbe sends a silent peer a wait query, which its reader answers at
// once. It waits for the write lock: a send that holds it ends by its own
// deadline.
func (t *TCP) sendProbe(p *peer) {
	select {
	case p.wmu <- struct{}{}:
	case <-t.done:
		return
	case <-p.exited:
		return
	}
	if p.err() == nil && !p.wclosed {
		t.writeControl(p, "a probe", wire.Header{Kind: wire.KindWaitQuery, Tag: probeID}, nil, time.Now().Add(t.o.ProbeTimeout))
	}
	p.unlock()
}

// Abort tells every peer that the job failed with err, so that their
// pending and later operations fail now with a PeerError naming this rank
// and err, and closes the transport. Local receives fail with
// collective.ErrClosed.
func (t *TCP) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	t.shutdown(err)
}

// Close says goodbye to every peer (so that none reports an error), waits
// up to CloseTimeout for them to acknowledge, and releases the connections.
// Pending receives fail with collective.ErrClosed. It is idempotent.
func (t *TCP) Close() error {
	t.shutdown(nil)
	return nil
}

func (t *TCP) shutdown(abortErr error) {
	t.shutOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		close(t.done)

		local := collective.ErrClosed
		bye := wire.Header{Kind: wire.KindClose}
		var text []byte
		if abortErr != nil {
			local = fmt.Errorf("%w (this rank aborted: %v)", collective.ErrClosed, abortErr)
			text = []byte(wire.Sanitize(abortErr.Error(), wire.MaxAbortText))
			bye = wire.Header{Kind: wire.KindAbort, Length: uint64(len(text))}
		}
		var live []*peer
		for _, p := range t.peers {
			if p != nil && p.box != nil {
				p.box.Fail(local)
				if p.conn != nil {
					live = append(live, p)
				}
			}
		}

		// Goodbye frame, then half-close: the peer reads everything we
		// sent, answers with its own half-close, and its reader and ours
		// both end at EOF. Closing outright could reset the connection
		// and lose the frame in the peer's receive buffer.
		deadline := time.Now().Add(t.o.CloseTimeout)
		var wg sync.WaitGroup
		for _, p := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !p.lockWithin(time.Until(deadline)) {
					p.conn.Close() // a send is stuck: no clean goodbye possible
					return
				}
				defer p.unlock()
				if p.wclosed {
					return
				}
				p.wclosed = true
				if p.err() == nil || p.gotBye.Load() {
					if _, err := p.writeLocked(bye, text, deadline); err != nil {
						p.conn.Close()
						return
					}
				}
				p.conn.CloseWrite()
			}()
		}
		wg.Wait()
		tm := time.NewTimer(time.Until(deadline))
		for _, p := range live {
			select {
			case <-p.exited:
				continue
			case <-tm.C:
			}
			break // out of time: close the rest outright
		}
		tm.Stop()
		for _, p := range live {
			p.conn.Close()
		}
		t.wg.Wait()
	})
}

// describeNetErr turns a read or write error into the cause a PeerError
// carries.
func (t *TCP) describeNetErr(err error) error {
	switch {
	case err == io.EOF:
		return errors.New("closed the connection")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("closed the connection mid-message")
	case isReset(err):
		return fmt.Errorf("reset the connection (%v)", err)
	}
	if se := (*silenceError)(nil); errors.As(err, &se) {
		return &collective.TimeoutError{After: se.silence, Waiting: "any data or heartbeat",
			Cause: fmt.Sprintf("nor did it answer a probe sent after %v of silence within %v: stopped, hung or cut off (a starved process answers late)",
				se.probedAfter.Round(time.Millisecond), se.probeTimeout)}
	}
	return err
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
