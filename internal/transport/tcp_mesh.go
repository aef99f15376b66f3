// Building the mesh: publishing and resolving addresses, dialing lower
// ranks, accepting higher ones, and the handshake on each connection.

package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
)

func (t *TCP) key(rank int) string { return t.o.KeyPrefix + strconv.Itoa(rank) }

// hostKey is where rank publishes its host identity, beside its address.
func (t *TCP) hostKey(rank int) string { return t.key(rank) + "/host" }

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
	host, err := t.o.Store.Get(ctx, t.hostKey(p.rank))
	if err != nil {
		return fmt.Errorf("transport: rank %d: reading rank %d's host identity (store key %q): %w", t.o.Rank, p.rank, t.hostKey(p.rank), err)
	}
	p.addr, p.host = addr, string(host)
	p.box = NewMailbox(p.describe())
	return nil
}

func (t *TCP) handshakeConfig() wire.HandshakeConfig {
	return wire.HandshakeConfig{Service: wire.ServiceMesh, JobID: t.o.JobID, Token: t.o.Token, Rank: t.o.Rank, Size: t.o.Size, Timeout: t.o.HandshakeTimeout}
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
