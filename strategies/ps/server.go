package ps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
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

	grpc *grpc.Server
	lis  net.Listener
	// shape, if set, shapes accepted connections to the job's network.
	shape func(net.Conn) net.Conn

	mu      sync.Mutex
	rounds  map[roundKey]*round
	params  map[string]*paramShard
	failure error
	byes    map[uint32]bool
	done    chan struct{} // closed once every worker has said goodbye
	stopped bool
	halted  chan struct{} // closed when stop has finished
}

func newServer(index, workers int, logf func(string, ...any)) *server {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &server{
		index: index, workers: workers, logf: logf,
		rounds: map[roundKey]*round{}, params: map[string]*paramShard{},
		byes: map[uint32]bool{}, done: make(chan struct{}), halted: make(chan struct{}),
	}
}

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
	s.grpc = grpc.NewServer(serverOptions()...)
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
	if h.shard == 0 || h.contrib == 0 {
		return nil, fmt.Errorf("round %s: rank %d announced an empty shard or no contributions", key, h.rank)
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
}

// accept takes one pushed message.
func (s *server) accept(st *pushState, h *header, segs [][]byte) error {
	if n := segLen(segs); uint64(n) != h.length {
		return fmt.Errorf("%s message announces %d payload bytes but carries %d", h.kind, h.length, n)
	}
	if st.kind == 0 {
		st.kind, st.rank = h.kind, h.rank
	} else if h.kind != st.kind || h.rank != st.rank {
		return fmt.Errorf("a push stream from rank %d carrying %s switched to %s from rank %d", st.rank, st.kind, h.kind, h.rank)
	}
	switch h.kind {
	case kindPush:
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
		st.bytes += int(h.length)
		return st.r.put(h, segs)
	case kindInit, kindGrad:
		return s.acceptParams(st, h, segs)
	}
	return fmt.Errorf("a push stream cannot carry %s messages", h.kind)
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

// worker describes the sender of a stream for error messages.
func worker(ctx context.Context, rank uint32, known bool) string {
	addr := "unknown address"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		addr = p.Addr.String()
	}
	if !known {
		return "a worker (" + addr + ")"
	}
	return fmt.Sprintf("worker rank %d (%s)", rank, addr)
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
	var (
		st pushState
		f  frame
	)
	for {
		err := stream.RecvMsg(&f)
		if err == io.EOF {
			break
		}
		if err != nil {
			// The worker went away mid-push: the round can never complete.
			return s.reject(worker(ctx, st.rank, st.kind != 0), fmt.Errorf("went away during a push (%d bytes in): %w", st.bytes, err))
		}
		err = s.accept(&st, &f.h, f.segs)
		f.release()
		if err != nil {
			return s.reject(worker(ctx, st.rank, st.kind != 0), err)
		}
	}
	fctx, cancel := earlier(ctx)
	defer cancel()
	if err := s.finish(fctx, &st); err != nil {
		return s.reject(worker(ctx, st.rank, true), err)
	}
	return stream.SendMsg(&frame{h: header{kind: kindAck, rank: uint32(s.index)}})
}

// earlier returns ctx with its deadline moved a little earlier, so that a
// wait that runs out on the server reports what it waited for to the
// worker, before the worker's own deadline cuts the stream.
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
	var req frame
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	h := req.h
	n := req.payloadLen()
	req.release()
	if n != 0 {
		return s.statusOf(fmt.Errorf("%w: %s request from rank %d carries %d payload bytes", collective.ErrInvalid, h.kind, h.rank, n))
	}
	var err error
	switch h.kind {
	case kindPull:
		err = s.pullRound(ctx, &h, func(r *round, lo, hi int) error {
			out := frame{h: h, buf: r.lend(lo, hi)}
			out.h.offset, out.h.length = uint64(lo), uint64(hi-lo)
			err := stream.SendMsg(&out)
			if out.buf != nil { // not handed to gRPC
				out.buf.Free()
			}
			return err
		})
	case kindParams:
		err = s.pullParams(ctx, &h, func(lo int, b *[]byte) error {
			out := frame{h: h, buf: mem.NewBuffer(b, mem.DefaultBufferPool())}
			out.h.offset, out.h.length = uint64(lo), uint64(len(*b))
			err := stream.SendMsg(&out)
			if out.buf != nil {
				out.buf.Free()
			}
			return err
		})
	default:
		err = fmt.Errorf("%w: a pull cannot ask for %s", collective.ErrInvalid, h.kind)
	}
	if err != nil {
		// A pull ends early only when its worker failed or gave up.
		return s.reject(worker(ctx, h.rank, true), err)
	}
	return nil
}

// pullRound streams [h.offset, h.offset+h.length) of a round's result.
func (s *server) pullRound(ctx context.Context, h *header, emit func(r *round, lo, hi int) error) error {
	r, err := s.round(h)
	if err != nil {
		return err
	}
	return r.read(ctx, int(h.offset), int(h.length), func(lo, hi int) error { return emit(r, lo, hi) })
}

func (s *server) hello(ctx context.Context, req *frame) (*frame, error) {
	h := &req.h
	if h.kind != kindHello {
		return nil, s.statusOf(fmt.Errorf("%w: hello carries %s", collective.ErrInvalid, h.kind))
	}
	if int(h.aux) != s.index || int(h.contrib) != s.workers {
		return nil, status.Errorf(codes.FailedPrecondition,
			"worker rank %d expects server %d of a %d-worker job, but this is server %d of a %d-worker job (a stale address in the store?)",
			h.rank, h.aux, h.contrib, s.index, s.workers)
	}
	if err := s.failed(); err != nil {
		return nil, s.statusOf(err)
	}
	return &frame{h: header{kind: kindAck, rank: uint32(s.index), contrib: uint32(s.workers)}}, nil
}

func (s *server) bye(ctx context.Context, req *frame) (*frame, error) {
	s.goodbye(req.h.rank)
	return &frame{h: header{kind: kindAck, rank: uint32(s.index)}}, nil
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
	var why []byte
	for _, seg := range req.segs {
		why = append(why, seg...)
	}
	s.fail(fmt.Errorf("worker rank %d aborted: %s", req.h.rank, why))
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
		err = s.pullRound(ctx, &h, func(r *round, lo, hi int) error {
			copy(dst[lo-int(h.offset):], r.acc[lo:hi])
			return nil
		})
	case kindParams:
		pool := mem.DefaultBufferPool()
		err = s.pullParams(ctx, &h, func(lo int, b *[]byte) error {
			copy(dst[lo-int(h.offset):], *b)
			pool.Put(b)
			return nil
		})
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
