package ps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// server holds one shard of every tensor: the rounds of collectives in
// progress and the parameters of training keys. It serves them over gRPC
// and, for the worker it is colocated with, through direct calls.
type server struct {
	index   int // this server's index, 0..k-1
	workers int // the world's size
	logf    func(format string, args ...any)
	pool    accPool

	// auth is this server's side of the handshake every connection opens
	// with; peerTimeout is how long a silent worker is presumed alive.
	auth        wire.HandshakeConfig
	peerTimeout time.Duration

	// held counts the bytes that workers' messages have made this server
	// allocate (accumulators, parameters, gradient sums); memLimit bounds
	// it, so that a header announcing a 1 TiB shard is refused rather than
	// killing the process with out-of-memory.
	held     atomic.Int64
	memLimit int64

	grpc *grpc.Server
	lis  net.Listener
	// shape, if set, shapes accepted connections to the job's network.
	shape func(net.Conn) net.Conn

	mu      sync.Mutex
	rounds  map[roundKey]*round
	params  map[string]*paramShard
	failure error
	byes    map[uint32]bool
	links   map[uint32]*link // each worker's connection that said hello
	done    chan struct{}    // closed once every worker has said goodbye
	stopped bool
	halted  chan struct{} // closed when stop has finished
}

func newServer(index, workers int, auth wire.HandshakeConfig, peerTimeout time.Duration, logf func(string, ...any)) *server {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &server{
		index: index, workers: workers, logf: logf,
		auth: auth, peerTimeout: peerTimeout, memLimit: memoryLimit(),
		rounds: map[roundKey]*round{}, params: map[string]*paramShard{},
		byes: map[uint32]bool{}, links: map[uint32]*link{},
		done: make(chan struct{}), halted: make(chan struct{}),
	}
}

// memoryLimit is the machine's memory, or GOMEMLIMIT where that is lower.
func memoryLimit() int64 {
	limit := debug.SetMemoryLimit(-1)
	if m := physicalMemory(); m > 0 {
		limit = min(limit, m)
	}
	return limit
}

// reserve accounts for n bytes that a worker's message makes this server
// allocate, or refuses them if they would take it past its memory limit.
func (s *server) reserve(n int, what string) error {
	if held := s.held.Add(int64(n)); held > s.memLimit {
		s.held.Add(-int64(n))
		return fmt.Errorf("%s needs %d bytes, but this server holds %d already of its limit of %d (the machine's memory)",
			what, n, held-int64(n), s.memLimit)
	}
	return nil
}

func (s *server) unreserve(n int) { s.held.Add(-int64(n)) }

var _ service = (*server)(nil)

// shapedListener shapes every accepted connection to the job's network.
type shapedListener struct {
	net.Listener
	shape func(net.Conn) net.Conn
}

func (l shapedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.shape(c), nil
}

// listen binds host:0 and serves gRPC on it until stop.
func (s *server) listen(host string) error {
	lis, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return fmt.Errorf("ps: server %d: listen on %s: %w", s.index, host, err)
	}
	if s.shape != nil {
		lis = shapedListener{lis, s.shape}
	}
	s.lis = lis
	creds := serverCreds(s.auth, s.workers, s.logf)
	creds.accepted = s.accepted
	s.grpc = grpc.NewServer(serverOptions(creds, s.peerTimeout)...)
	s.grpc.RegisterService(&serviceDesc, s)
	go func() {
		if err := s.grpc.Serve(lis); err != nil {
			s.logf("ps: server %d (%s): %v", s.index, s.addr(), err)
		}
	}()
	return nil
}

// addr is the host:port workers dial.
func (s *server) addr() string {
	if s.lis == nil {
		return "in-process"
	}
	return s.lis.Addr().String()
}

// stop closes every connection at once (in-flight RPCs fail) and fails
// whatever still waits in-process.
func (s *server) stop() {
	s.mu.Lock()
	already := s.stopped
	s.stopped = true
	s.mu.Unlock()
	if already {
		return
	}
	if s.grpc != nil {
		s.grpc.Stop()
	}
	select {
	case <-s.done: // every worker said goodbye: an orderly end, nothing to report
		s.failQuietly(fmt.Errorf("server %d (%s) stopped", s.index, s.addr()))
	default:
		s.fail(fmt.Errorf("server %d (%s) stopped", s.index, s.addr()))
	}
	close(s.halted)
}

// fail latches the job's failure: every waiting and later operation on this
// server fails with it. Like core's abort, one failure fails the job
// everywhere, promptly, rather than leaving ranks to their deadlines.
func (s *server) fail(err error) { s.latch(err, true) }

// failQuietly latches err without logging it: the end of an orderly job.
func (s *server) failQuietly(err error) { s.latch(err, false) }

func (s *server) latch(err error, log bool) {
	s.mu.Lock()
	if s.failure != nil {
		s.mu.Unlock()
		return
	}
	s.failure = &jobError{err}
	rounds, params := s.rounds, s.params
	s.rounds, s.params = map[roundKey]*round{}, map[string]*paramShard{}
	failure := s.failure
	s.mu.Unlock()
	if log {
		s.logf("ps: server %d (%s): %v", s.index, s.addr(), failure)
	}
	for _, r := range rounds {
		r.fail(failure)
	}
	for _, p := range params {
		p.fail(failure)
	}
}

func (s *server) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// jobError is a server's latched failure.
type jobError struct{ err error }

func (e *jobError) Error() string { return "job failed: " + e.err.Error() }
func (e *jobError) Unwrap() error { return e.err }

// reject fails the job with an error from a worker's RPC, naming the worker
// (unless the error is the job's failure already), and returns the status
// the worker gets.
func (s *server) reject(who string, err error) error {
	var je *jobError
	if !errors.As(err, &je) {
		err = fmt.Errorf("%s: %w", who, err)
		s.fail(err)
	}
	return s.statusOf(err)
}

// refuse answers a message that breaks the protocol, none of which has
// been applied, without failing the job: its sender learns why
// (InvalidArgument, naming it), so a genuine worker's operation fails and
// aborts the job itself, while a peer that misbehaves cannot end it.
func (s *server) refuse(who string, err error) error {
	var je *jobError
	if errors.As(err, &je) {
		return s.statusOf(err)
	}
	err = fmt.Errorf("%s: refused: %w", who, err)
	s.logf("ps: server %d (%s): %v", s.index, s.addr(), err)
	return status.Error(codes.InvalidArgument, err.Error())
}

// round returns the round a message belongs to, making it on first use.
func (s *server) round(h *header) (*round, error) {
	key := roundKey{h.group, h.seq}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != nil {
		return nil, s.failure
	}
	if r := s.rounds[key]; r != nil {
		return r, r.matches(h)
	}
	switch {
	case h.shard == 0 || h.contrib == 0:
		return nil, fmt.Errorf("round %s: rank %d announced an empty shard or no contributions", key, h.rank)
	case int(h.contrib) > s.workers:
		return nil, fmt.Errorf("round %s: rank %d announced %d contributions per element in a %d-worker job", key, h.rank, h.contrib, s.workers)
	case h.pull > h.shard*uint64(s.workers):
		return nil, fmt.Errorf("round %s: rank %d announced %d bytes to pull from a %d-byte shard, more than %d workers pull", key, h.rank, h.pull, h.shard, s.workers)
	}
	if err := s.reserve(int(h.shard), fmt.Sprintf("round %s", key)); err != nil {
		return nil, err
	}
	r := newRound(s, key, h)
	s.rounds[key] = r
	return r, nil
}

// release forgets a round whose every byte has been pulled.
func (s *server) release(r *round) {
	s.mu.Lock()
	if s.rounds[r.key] == r {
		delete(s.rounds, r.key)
	}
	s.mu.Unlock()
}

// pushState follows one push stream (or one in-process push).
type pushState struct {
	kind  kind
	rank  uint32
	r     *round
	p     *paramShard
	step  int64
	bytes int
	// applied: some message of the stream has changed the server's state,
	// so a later error leaves a round or step that cannot complete.
	applied bool
}

// accept takes one pushed message.
func (s *server) accept(st *pushState, h *header, segs [][]byte) error {
	if n := segLen(segs); uint64(n) != h.length {
		return fmt.Errorf("%s message announces %d payload bytes but carries %d", h.kind, h.length, n)
	}
	if int(h.rank) >= s.workers {
		return fmt.Errorf("%s message from rank %d of a %d-worker job", h.kind, h.rank, s.workers)
	}
	if st.kind == 0 {
		st.kind, st.rank = h.kind, h.rank
	} else if h.kind != st.kind || h.rank != st.rank {
		return fmt.Errorf("a push stream from rank %d carrying %s switched to %s from rank %d", st.rank, st.kind, h.kind, h.rank)
	}
	switch h.kind {
	case kindPush:
		if err := pieceErr(h); err != nil {
			return err
		}
		if st.r == nil {
			r, err := s.round(h)
			if err != nil {
				return err
			}
			st.r = r
			r.noteRank(h.rank)
		} else if st.r.key != (roundKey{h.group, h.seq}) {
			return fmt.Errorf("a push stream for round %s switched to round %s", st.r.key, roundKey{h.group, h.seq})
		} else if err := st.r.matches(h); err != nil {
			return err
		}
		if err := st.r.put(h, segs); err != nil {
			return err
		}
		st.bytes += int(h.length)
		st.applied = st.applied || h.length > 0
		return nil
	case kindInit, kindGrad:
		return s.acceptParams(st, h, segs)
	}
	return fmt.Errorf("a push stream cannot carry %s messages", h.kind)
}

// pieceErr checks a pushed piece against its header's own chunk grid, before
// the piece makes a round: not empty, within one chunk, and a whole chunk
// if reduced.
func pieceErr(h *header) error {
	off, n, chunk, shard := h.offset, h.length, uint64(h.chunk), h.shard
	if n == 0 {
		return fmt.Errorf("round %s: rank %d pushed an empty piece at offset %d", roundKey{h.group, h.seq}, h.rank, off)
	}
	c := off / chunk
	lo, hi := c*chunk, min((c+1)*chunk, shard)
	if off+n > hi {
		return fmt.Errorf("round %s: rank %d's piece [%d, %d) crosses the end of chunk %d [%d, %d)", roundKey{h.group, h.seq}, h.rank, off, off+n, c, lo, hi)
	}
	if h.op != 0 && (off != lo || off+n != hi) {
		return fmt.Errorf("round %s: rank %d's piece [%d, %d) of a reduction is not chunk %d [%d, %d)", roundKey{h.group, h.seq}, h.rank, off, off+n, c, lo, hi)
	}
	return nil
}

// finish ends a push that delivered all its messages.
func (s *server) finish(ctx context.Context, st *pushState) error {
	if st.p != nil {
		return st.p.finish(ctx, st)
	}
	return nil
}

func segLen(segs [][]byte) int {
	n := 0
	for _, s := range segs {
		n += len(s)
	}
	return n
}

// statusOf turns a server-side error into the status a worker sees.
func (s *server) statusOf(err error) error {
	code := codes.Aborted
	switch {
	case errors.Is(err, collective.ErrTimeout):
		code = codes.DeadlineExceeded
	case errors.Is(err, collective.ErrMismatch), errors.Is(err, collective.ErrInvalid):
		code = codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}

// push serves a Push stream: every message is taken as it arrives, reduced
// or copied straight from gRPC's receive buffers, which are then released.
func (s *server) push(stream grpc.ServerStream) error {
	ctx := stream.Context()
	l, err := sender(ctx)
	if err != nil {
		return err
	}
	var st pushState
	f := frame{lenient: true}
	for {
		err := stream.RecvMsg(&f)
		if err == io.EOF {
			break
		}
		if err != nil {
			if status.Code(err) == codes.ResourceExhausted && !st.applied {
				return s.refuse(l.String(), err) // a message over the size limit
			}
			// The worker went away mid-push: the round can never complete.
			return s.reject(l.String(), fmt.Errorf("went away during a push (%d bytes in): %w", st.bytes, err))
		}
		err = f.bad
		if err == nil {
			err = l.claims(&f.h)
		}
		if err == nil {
			err = s.accept(&st, &f.h, f.segs)
		}
		f.release()
		if err != nil {
			if !st.applied {
				return s.refuse(l.String(), err)
			}
			return s.reject(l.String(), err)
		}
	}
	if st.r != nil {
		st.r.noteDone(st.rank)
	}
	fctx, cancel := earlier(ctx)
	defer cancel()
	if err := s.finish(fctx, &st); err != nil {
		return s.reject(l.String(), err)
	}
	return stream.SendMsg(&frame{h: header{kind: kindAck, rank: uint32(s.index)}})
}

// earlier returns ctx with its deadline moved a little earlier, so that a
// wait that runs out on the server usually reports what it waited for to
// the worker before the worker's own deadline cuts the stream. When it
// does not (the request arrived late on a loaded machine), the worker asks
// with a why instead (serverConn.explain).
func earlier(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(max(time.Until(dl)/20, 20*time.Millisecond), time.Second)
	return context.WithDeadline(ctx, dl.Add(-margin))
}

// pull serves a Pull stream: one request, then the range in pieces of at
// most a chunk, each sent as soon as its chunk is complete.
func (s *server) pull(stream grpc.ServerStream) error {
	ctx, cancel := earlier(stream.Context())
	defer cancel()
	l, err := sender(ctx)
	if err != nil {
		return err
	}
	req := frame{lenient: true}
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	h := req.h
	n := req.payloadLen()
	req.release()
	switch {
	case req.bad != nil:
		return s.refuse(l.String(), req.bad)
	case n != 0:
		return s.refuse(l.String(), fmt.Errorf("%s request carries %d payload bytes", h.kind, n))
	}
	if err := l.claims(&h); err != nil {
		return s.refuse(l.String(), err)
	}
	switch h.kind {
	case kindPull:
		r, err := s.round(&h)
		if err != nil {
			return s.refuse(l.String(), err)
		}
		err = r.read(ctx, int(h.offset), int(h.length), func(lo, hi int) error {
			out := frame{h: h, buf: r.lend(lo, hi)}
			out.h.offset, out.h.length = uint64(lo), uint64(hi-lo)
			err := stream.SendMsg(&out)
			if out.buf != nil { // not handed to gRPC
				out.buf.Free()
			}
			return err
		})
		if err != nil {
			// A pull ends early only when its worker failed or gave up.
			return s.reject(l.String(), err)
		}
	case kindParams:
		p, err := s.paramsFor(&h)
		if err != nil {
			return s.refuse(l.String(), err)
		}
		err = s.pullParams(ctx, p, &h, func(lo int, b *[]byte) error {
			out := frame{h: h, buf: mem.NewBuffer(b, mem.DefaultBufferPool())}
			out.h.offset, out.h.length = uint64(lo), uint64(len(*b))
			err := stream.SendMsg(&out)
			if out.buf != nil {
				out.buf.Free()
			}
			return err
		})
		if err != nil {
			return s.reject(l.String(), err)
		}
	default:
		return s.refuse(l.String(), fmt.Errorf("a pull cannot ask for %s", h.kind))
	}
	return nil
}

func (s *server) hello(ctx context.Context, req *frame) (*frame, error) {
	l, err := s.unary(ctx, req, kindHello)
	if err != nil {
		return nil, err
	}
	h := &req.h
	if int(h.aux) != s.index || int(h.contrib) != s.workers {
		return nil, status.Errorf(codes.FailedPrecondition,
			"worker rank %d expects server %d of a %d-worker job, but this is server %d of a %d-worker job (a stale address in the store?)",
			h.rank, h.aux, h.contrib, s.index, s.workers)
	}
	s.hold(l)
	if err := s.failed(); err != nil {
		return nil, s.statusOf(err)
	}
	return &frame{h: header{kind: kindAck, rank: uint32(s.index), contrib: uint32(s.workers)}}, nil
}

func (s *server) bye(ctx context.Context, req *frame) (*frame, error) {
	l, err := s.unary(ctx, req, kindBye)
	if err != nil {
		return nil, err
	}
	s.goodbye(l.rank)
	return &frame{h: header{kind: kindAck, rank: uint32(s.index)}}, nil
}

// unary checks a unary call's request: its kind, its sender's rank, and
// that it carries no more payload than it says.
func (s *server) unary(ctx context.Context, req *frame, want kind) (*link, error) {
	l, err := sender(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case req.h.kind != want:
		err = fmt.Errorf("a %s call carries a %s message", want, req.h.kind)
	case uint64(req.payloadLen()) != req.h.length:
		err = fmt.Errorf("%s message announces %d payload bytes but carries %d", req.h.kind, req.h.length, req.payloadLen())
	default:
		err = l.claims(&req.h)
	}
	if err != nil {
		return nil, s.refuse(l.String(), err)
	}
	return l, nil
}

// goodbye records that a worker has closed; once all have, the job is over.
func (s *server) goodbye(rank uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byes[rank] || int(rank) >= s.workers {
		return
	}
	s.byes[rank] = true
	if len(s.byes) == s.workers {
		close(s.done)
	}
}

func (s *server) abort(ctx context.Context, req *frame) (*frame, error) {
	l, err := s.unary(ctx, req, kindAbort)
	if err != nil {
		return nil, err
	}
	var why []byte
	for _, seg := range req.segs {
		why = append(why, seg...)
	}
	s.fail(fmt.Errorf("worker rank %d aborted: %s", l.rank, wire.Sanitize(string(why), maxAbortText)))
	return &frame{h: header{kind: kindAck, rank: uint32(s.index)}}, nil
}

// localPush is push for the worker this server is colocated with: the same
// path as a Push stream's, straight from the worker's memory.
func (s *server) localPush(ctx context.Context, h header, pieces []piece) error {
	var st pushState
	var segs [1][]byte
	for _, p := range pieces {
		h.offset, h.length = uint64(p.offset), uint64(len(p.data))
		segs[0] = p.data
		if err := s.accept(&st, &h, segs[:]); err != nil {
			return s.rejectLocal(h.rank, err)
		}
	}
	if st.r != nil {
		st.r.noteDone(st.rank)
	}
	if err := s.finish(ctx, &st); err != nil {
		return s.rejectLocal(h.rank, err)
	}
	return nil
}

// localPull is pull for the colocated worker: it copies into dst.
func (s *server) localPull(ctx context.Context, h header, dst []byte) error {
	var err error
	switch h.kind {
	case kindPull:
		var r *round
		if r, err = s.round(&h); err == nil {
			err = r.read(ctx, int(h.offset), int(h.length), func(lo, hi int) error {
				copy(dst[lo-int(h.offset):], r.acc[lo:hi])
				return nil
			})
		}
	case kindParams:
		var p *paramShard
		if p, err = s.paramsFor(&h); err == nil {
			pool := mem.DefaultBufferPool()
			err = s.pullParams(ctx, p, &h, func(lo int, b *[]byte) error {
				copy(dst[lo-int(h.offset):], *b)
				pool.Put(b)
				return nil
			})
		}
	default:
		err = fmt.Errorf("%w: a pull cannot ask for %s", collective.ErrInvalid, h.kind)
	}
	if err != nil {
		return s.rejectLocal(h.rank, err)
	}
	return nil
}

// rejectLocal is reject for the colocated worker.
func (s *server) rejectLocal(rank uint32, err error) error {
	var je *jobError
	if !errors.As(err, &je) {
		err = fmt.Errorf("worker rank %d (in-process): %w", rank, err)
		s.fail(err)
	}
	return err
}
