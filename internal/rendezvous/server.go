package rendezvous

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/internal/wire"
)

const (
	// handshakeTimeout bounds a connection's set-up, so that a peer that
	// connects and says nothing cannot hold a slot.
	handshakeTimeout = 10 * time.Second
	// writeTimeout bounds one answer: a client that stops reading is dropped
	// rather than blocking the goroutine that answers it.
	writeTimeout = 30 * time.Second
	// maxWaitsPerConn bounds the waiting requests of one connection; each is
	// a goroutine and a timer on the server.
	maxWaitsPerConn = 4096
	// DefaultMaxConns is ServerOptions.MaxConns's default.
	DefaultMaxConns = 16384
)

// ServerOptions configure a Server. The zero value is usable.
type ServerOptions struct {
	// JobID names the job and Token is its secret (JobID when empty).
	// Clients prove they hold the token in internal/wire's handshake (an
	// HMAC over fresh nonces, so it never crosses the wire) or are refused,
	// so that a stray process from another job cannot join this one.
	JobID string
	Token []byte
	// Limits bound keys, values and waits; zero fields mean the defaults.
	Limits Limits
	// MaxConns bounds open connections; 0 means DefaultMaxConns. At the
	// bound, a new connection closes the oldest one still in its
	// handshake, so that strangers that connect and say nothing cannot
	// keep clients out; only authenticated clients are never closed.
	MaxConns int
	// Logf, if set, receives a line for each refused or broken connection.
	Logf func(format string, args ...any)
	// HandshakeTimeout bounds a new connection's handshake; 0 means 10s.
	HandshakeTimeout time.Duration
}

// Server hosts a TCP store. The launcher or rank 0 runs one per job; every
// rank, rank 0 included, talks to it through a Client.
type Server struct {
	ln       net.Listener
	auth     wire.HandshakeConfig
	lim      Limits
	maxConns int
	logf     func(format string, args ...any)
	kv       *kvStore

	mu      sync.Mutex
	conns   map[*serverConn]struct{}
	joining []*serverConn // of conns, those still in the handshake, oldest first
	closing bool
	changed chan struct{} // poked (never blocking) when a connection ends

	wg         sync.WaitGroup // the accept loop, connections, waiting requests
	requests   atomic.Int64   // requests decoded, for tests
	handshakes atomic.Int64   // clients accepted, for linger
}

// Listen starts a store server on addr ("host:port"; port 0 picks a free
// one, see Addr). It listens on the interface addr names, not on all of them.
func Listen(addr string, o ServerOptions) (*Server, error) {
	auth := handshakeConfig(o.JobID, o.Token, storeRank)
	if o.HandshakeTimeout > 0 {
		auth.Timeout = o.HandshakeTimeout
	}
	if err := auth.Validate(); err != nil {
		return nil, fmt.Errorf("rendezvous: store server: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: store server: %w", err)
	}
	s := &Server{
		ln:       ln,
		auth:     auth,
		lim:      o.Limits.withDefaults(),
		maxConns: o.MaxConns,
		logf:     o.Logf,
		kv:       newKV(),
		conns:    map[*serverConn]struct{}{},
		changed:  make(chan struct{}, 1),
	}
	if s.maxConns <= 0 {
		s.maxConns = DefaultMaxConns
	}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is the address the server listens on, with the actual port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server at once, dropping every connection.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Shutdown(ctx) // its only error is about clients it had to drop, which Close means to do
	return nil
}

// Shutdown stops accepting connections, waits until every client has
// closed its own (or ctx ends), then drops any left. Rank 0 calls it so that
// the store outlives every rank still using it, rather than vanishing under
// ranks that finish a moment later.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	s.mu.Unlock()
	if first {
		s.ln.Close()
	}
	// Only authenticated clients are waited for: a connection still in its
	// handshake is no client of this job yet, and one that says nothing
	// would otherwise hold rank 0's exit until its handshake timed out.
	s.mu.Lock()
	for _, c := range s.joining {
		c.nc.Close()
	}
	s.mu.Unlock()
	var err error
	for err == nil {
		s.mu.Lock()
		n := len(s.conns) - len(s.joining)
		s.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			err = fmt.Errorf("rendezvous: store %s: dropped %d clients still connected at shutdown: %w", s.Addr(), n, ctx.Err())
		}
	}
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// linger keeps serving, new connections included, until at least clients
// clients have connected and all of them have gone, or ctx ends. A rank 0
// whose Join failed lingers so that ranks still on their way learn why
// from the store rather than finding it gone and waiting out their timeout.
func (s *Server) linger(ctx context.Context, clients int) {
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 && s.handshakes.Load() >= int64(clients) {
			return
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) serve() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or similar: back off rather than spin,
			// as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logf("rendezvous: store %s: accept: %v; retrying in %v", s.Addr(), err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := &serverConn{s: s, nc: nc, waits: map[uint64]chan struct{}{}, done: make(chan struct{})}
		if !s.track(c) {
			s.logf("rendezvous: store %s: refused %s: closing, or at the limit of %d authenticated connections", s.Addr(), nc.RemoteAddr(), s.maxConns)
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go c.serve()
	}
}

func (s *Server) track(c *serverConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if len(s.conns) >= s.maxConns {
		if len(s.joining) == 0 {
			return false
		}
		oldest := s.joining[0]
		s.joining = s.joining[1:]
		delete(s.conns, oldest)
		oldest.nc.Close() // its goroutine ends at once
		s.logf("rendezvous: store %s: closed %s, still in its handshake, to make room: at the limit of %d connections", s.Addr(), oldest.nc.RemoteAddr(), s.maxConns)
	}
	s.conns[c] = struct{}{}
	s.joining = append(s.joining, c)
	return true
}

// joined takes c off the connections still in their handshake; under mu.
func (s *Server) joined(c *serverConn) {
	if i := slices.Index(s.joining, c); i >= 0 {
		s.joining = slices.Delete(s.joining, i, i+1)
	}
}

func (s *Server) untrack(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.joined(c)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// handshake checks that a new client holds the job's token; admit is
// asked, before the answer that lets a client in, whether the connection
// is still wanted.
func (s *Server) handshake(nc net.Conn, admit func() bool) error {
	_, err := wire.ServerHandshake(context.Background(), nc, s.auth, func(int) error {
		if !admit() {
			return errors.New("closed to make room for newer connections")
		}
		return nil
	})
	return err
}

// serverConn is one client's connection. Requests are read in order by one
// goroutine; those that must wait get a goroutine each, so that a waiting
// Get never holds up the Sets behind it.
type serverConn struct {
	s  *Server
	nc net.Conn

	wmu  sync.Mutex // one answer at a time
	wbuf []byte

	mu    sync.Mutex
	waits map[uint64]chan struct{} // waiting requests by id; closing the channel cancels
	done  chan struct{}            // closed when the read loop ends
}

func (c *serverConn) serve() {
	s := c.s
	defer s.wg.Done()
	defer s.untrack(c)
	defer c.nc.Close()
	// An authenticated client is never closed to make room (see track).
	admit := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.conns[c]; !ok {
			return false // closed already
		}
		s.joined(c)
		return true
	}
	if err := s.handshake(c.nc, admit); err != nil {
		s.logf("rendezvous: store %s: refused %s: %v", s.Addr(), c.nc.RemoteAddr(), err)
		return
	}
	s.handshakes.Add(1)
	defer close(c.done)
	br := bufio.NewReader(c.nc)
	var buf []byte
	for {
		p, err := readFrame(br, s.lim.maxRequest(), buf)
		if err != nil {
			var big *frameTooLargeError
			if errors.As(err, &big) {
				c.refuseLarge(br, big)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.logf("rendezvous: store %s: client %s: %v", s.Addr(), c.nc.RemoteAddr(), err)
			}
			return
		}
		buf = p
		req, err := decodeRequest(p, s.lim)
		if err != nil {
			// The frame was whole, so the stream is still in step: answer
			// this request with the reason and carry on with the next.
			s.logf("rendezvous: store %s: client %s: %v", s.Addr(), c.nc.RemoteAddr(), err)
			if req.op >= opSet && req.op <= opWait {
				c.reply(req.op, req.id, statusError, []byte(clip(err.Error())))
			}
			continue
		}
		s.requests.Add(1)
		c.dispatch(&req)
	}
}

// refuseLarge answers a request too large to read, when its header can be
// read, so that the client learns the limit rather than seeing a dropped
// connection. Then the connection ends, since the stream cannot be trusted
// to carry on; a little of the rest is read first, so that closing with
// unread data does not reset the connection before the answer arrives.
func (c *serverConn) refuseLarge(br *bufio.Reader, big *frameTooLargeError) {
	var hdr [9]byte
	c.nc.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	op, id := hdr[0], binary.BigEndian.Uint64(hdr[1:])
	if op < opSet || op > opWait {
		return
	}
	msg := fmt.Sprintf("request of %d bytes exceeds this store's %d-byte limit", big.n, big.limit)
	c.reply(op, id, statusError, []byte(msg))
	if tc, ok := c.nc.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	io.CopyN(io.Discard, br, min(big.n-int64(len(hdr)), 1<<20))
}

func (c *serverConn) dispatch(req *request) {
	kv := c.s.kv
	switch req.op {
	case opSet:
		kv.set(req.key, bytes.Clone(req.value)) // req.value aliases the read buffer
		c.reply(req.op, req.id, statusOK, nil)
	case opAdd:
		sum, err := kv.add(req.key, req.delta)
		if err != nil {
			c.reply(req.op, req.id, statusError, []byte(clip(err.Error())))
			return
		}
		c.reply(req.op, req.id, statusOK, binary.BigEndian.AppendUint64(nil, uint64(sum)))
	case opGet:
		if w := kv.watch(req.key); w != nil {
			c.wait(req, w)
			return
		}
		v, _ := kv.get(req.key) // keys are never deleted, so it is still there
		c.reply(req.op, req.id, statusOK, v)
	case opWait:
		if w := kv.watch(req.keys...); w != nil {
			c.wait(req, w)
			return
		}
		c.reply(req.op, req.id, statusOK, nil)
	case opCancel:
		c.mu.Lock()
		if ch, ok := c.waits[req.id]; ok {
			close(ch)
			delete(c.waits, req.id)
		}
		c.mu.Unlock()
	}
}

// wait answers req once w completes, its wait time passes, the client
// cancels it, or the connection ends.
func (c *serverConn) wait(req *request, w *waiter) {
	kv := c.s.kv
	c.mu.Lock()
	_, dup := c.waits[req.id]
	if dup || len(c.waits) >= maxWaitsPerConn {
		c.mu.Unlock()
		kv.unwatch(w)
		msg := fmt.Sprintf("more than %d waiting requests on one connection", maxWaitsPerConn)
		if dup {
			msg = fmt.Sprintf("request id %d is already waiting", req.id)
		}
		c.reply(req.op, req.id, statusError, []byte(msg))
		return
	}
	cancel := make(chan struct{})
	c.waits[req.id] = cancel
	c.mu.Unlock()

	c.s.wg.Add(1)
	go func() {
		defer c.s.wg.Done()
		t := time.NewTimer(req.wait)
		defer t.Stop()
		completed := false
		select {
		case <-w.done:
			completed = true
		case <-t.C:
			completed = kv.unwatch(w)
			if !completed {
				msg := describeKeys(kv.missing(w.keys))
				c.reply(req.op, req.id, statusTimeout, []byte(clip(msg)))
			}
		case <-cancel:
			kv.unwatch(w)
			return // cancel has removed it from waits
		case <-c.done:
			kv.unwatch(w)
			return
		}
		c.mu.Lock()
		delete(c.waits, req.id)
		c.mu.Unlock()
		if !completed {
			return
		}
		var v []byte
		if req.op == opGet {
			v, _ = kv.get(req.key)
		}
		c.reply(req.op, req.id, statusOK, v)
	}()
}

func (c *serverConn) reply(op byte, id uint64, status byte, body []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = appendResponse(c.wbuf[:0], &response{status: status, op: op, id: id, body: body})
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.nc.Write(c.wbuf); err != nil {
		// A half-written frame leaves the stream out of step: drop the
		// connection, which ends its read loop.
		c.nc.Close()
	}
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil // do not keep a large value's buffer for the connection's life
	}
}
