package ps

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// A server knows each worker by its connection: the rank it proved in the
// handshake, and its address. A worker's connection that ends before the
// worker said goodbye (its process died and the kernel reset it, or it
// sent nothing, not even a keepalive ack, for the peer timeout: stopped)
// fails the job with an error that names the worker, on every rank, even
// when none of its calls was in flight to notice.

// link is an authenticated worker's connection to this server.
type link struct {
	rank uint32
	addr string
	// hello: the worker said hello over it, so it is the worker's
	// connection, whose loss means the worker's.
	hello atomic.Bool
}

func (l *link) String() string { return fmt.Sprintf("worker rank %d (%s)", l.rank, l.addr) }

// claims checks that a message speaks for the rank its sender proved to be.
func (l *link) claims(h *header) error {
	if h.rank != l.rank {
		return fmt.Errorf("a %s message claims rank %d, but the connection authenticated as rank %d", h.kind, h.rank, l.rank)
	}
	return nil
}

// sender is the authenticated worker whose connection an RPC came over.
func sender(ctx context.Context) (*link, error) {
	if p, ok := peer.FromContext(ctx); ok {
		if a, ok := p.AuthInfo.(peerAuth); ok && a.link != nil {
			return a.link, nil
		}
	}
	return nil, status.Error(codes.Unauthenticated, "ps: the connection did not authenticate")
}

// linkConn reports the end of a worker's connection, whatever ends it:
// gRPC closes it on a reset, on a keepalive that went unanswered, and on
// the worker's own close.
type linkConn struct {
	net.Conn
	once   sync.Once
	closed func()
}

func (c *linkConn) Close() error {
	c.once.Do(c.closed)
	return c.Conn.Close()
}

// accepted wraps an authenticated connection from a worker.
func (s *server) accepted(rank int, conn net.Conn) (net.Conn, *link) {
	l := &link{rank: uint32(rank), addr: conn.RemoteAddr().String()}
	return &linkConn{Conn: conn, closed: func() { s.linkLost(l) }}, l
}

// hold records l as its worker's connection (the one it said hello over).
func (s *server) hold(l *link) {
	l.hello.Store(true)
	s.mu.Lock()
	s.links[l.rank] = l
	s.mu.Unlock()
}

// linkLost fails the job if a worker's connection ended before its goodbye.
func (s *server) linkLost(l *link) {
	if !l.hello.Load() {
		return
	}
	s.mu.Lock()
	over := s.byes[l.rank] || s.stopped || s.links[l.rank] != l
	s.mu.Unlock()
	if over {
		return
	}
	s.fail(fmt.Errorf("%s: its connection to this server ended before it said goodbye: its process died, or sent nothing, not even a keepalive ack, for %v (stopped)",
		l, s.peerTimeout))
}

// whereIs names worker w and its address, as this server knows it.
func (s *server) whereIs(w uint32) string {
	if s.mesh != nil {
		if addr := s.mesh.tr.PeerAddr(int(w)); addr != "" {
			return fmt.Sprintf("rank %d (%s)", w, addr)
		}
		return fmt.Sprintf("rank %d", w)
	}
	s.mu.Lock()
	l := s.links[w]
	s.mu.Unlock()
	if l == nil {
		return fmt.Sprintf("rank %d (not connected to this server)", w)
	}
	return fmt.Sprintf("rank %d (%s)", w, l.addr)
}

// why answers a worker whose call ran into its deadline before this
// server's account of the wait reached it: what the call waited for.
func (s *server) why(ctx context.Context, req *frame) (*frame, error) {
	if _, err := s.unary(ctx, req, kindWhy); err != nil {
		return nil, err
	}
	text := wire.Sanitize(s.whyText(&req.h), maxAbortText)
	return &frame{h: header{kind: kindAck, rank: uint32(s.index), length: uint64(len(text))}, payload: []byte(text)}, nil
}

func (s *server) whyText(h *header) string {
	if err := s.failed(); err != nil {
		return err.Error()
	}
	switch kind(h.aux) {
	case kindPush, kindPull:
		key := roundKey{h.group, h.seq}
		s.mu.Lock()
		r := s.rounds[key]
		s.mu.Unlock()
		if r == nil {
			return fmt.Sprintf("round %s is not in progress here: no push or pull of it has arrived, or all of it has been pulled", key)
		}
		if c := r.firstIncomplete(); c >= 0 {
			return r.describe(c)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return fmt.Sprintf("round %s is complete here; %d of its %d bytes have been pulled", key, r.pulled, r.desc.pull)
	default:
		s.mu.Lock()
		p := s.params[h.name]
		s.mu.Unlock()
		if p == nil {
			return fmt.Sprintf("key %q has not been initialised here", h.name)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.waitingFor(h.seq - int64(p.staleness))
	}
}

// diagnosisBudget bounds a why, as core bounds a diagnosis of the mesh:
// half the operation's timeout, within 50 ms and 1 s.
func diagnosisBudget(opTimeout time.Duration) time.Duration {
	return min(max(opTimeout/2, 50*time.Millisecond), time.Second)
}

// ownDeadline: err is this worker's own deadline cutting an RPC, not a
// status from the server.
func ownDeadline(ctx context.Context, err error) bool {
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.DeadlineExceeded && s.Message() == context.DeadlineExceeded.Error() &&
		ctx.Err() == context.DeadlineExceeded
}

// waitedFor says what a call with header h waits for, in a timeout.
func (h *header) waitedFor() string {
	key := roundKey{h.group, h.seq}
	switch h.kind {
	case kindPull:
		return fmt.Sprintf("bytes [%d, %d) of the result of round %s", h.offset, h.offset+h.length, key)
	case kindPush:
		return fmt.Sprintf("the server to take a push to round %s", key)
	case kindInit:
		return fmt.Sprintf("the initial values of key %q", h.name)
	case kindGrad:
		return fmt.Sprintf("the server to take the gradient of key %q step %d", h.name, h.seq)
	default:
		return fmt.Sprintf("the parameters of key %q at step %d", h.name, h.seq)
	}
}

// explain turns an RPC that this worker's own deadline cut, before the
// server's account of the wait could arrive (a request that reached a
// loaded server late), into a TimeoutError that carries that account: it
// asks the server (why) within a diagnosis budget. A server that does not
// answer is named as the likely cause: stopped, or its process stuck.
func (c *serverConn) explain(ctx context.Context, op string, h *header, start time.Time, err error) error {
	if c.cc == nil || !ownDeadline(ctx, err) {
		return c.errorf(op, err)
	}
	te := &collective.TimeoutError{After: time.Since(start), Waiting: h.waitedFor()}
	budget := diagnosisBudget(c.timeout)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	req := &frame{h: header{kind: kindWhy, rank: c.rank, group: h.group, seq: h.seq, name: h.name, aux: uint32(h.kind)}}
	var resp frame
	switch werr := c.cc.Invoke(dctx, methodWhy, req, &resp); {
	case werr == nil:
		var text []byte
		for _, seg := range resp.segs {
			text = append(text, seg...)
		}
		resp.release()
		te.Cause = fmt.Sprintf("server %d says: %s", c.index, wire.Sanitize(string(text), maxAbortText))
	case dctx.Err() != nil:
		te.Cause = fmt.Sprintf("server %d (%s) did not answer within %v either: its process is stopped or stuck", c.index, c.addr, budget)
	default:
		te.Cause = fmt.Sprintf("asking server %d what it waited for failed: %v", c.index, rpcErr(werr))
	}
	return c.errorf(op, te)
}
