package ps

import (
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// server holds one shard of every tensor: the rounds of collectives in
// progress and the parameters of training keys. It serves them over gRPC
// and, for the worker it is colocated with, through direct calls.
type server struct {
	index   int // this server's index, 0..k-1
	workers int // the world's size
	logf    func(format string, args ...any)
	// refusals says refused connections at a bounded rate (nil in process).
	refusals *wire.RefusalLog
	pool     accPool
	wire     wireCount // gRPC payload bytes of pushes and pulls served; see wire.go

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
	// mesh serves the workers over the job's transport (transport=mesh).
	mesh *meshServer
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
	s.refusals = creds.refusals
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
		s.refusals.Flush()
	}
	if s.mesh != nil {
		s.mesh.stop()
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
