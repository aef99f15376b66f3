package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// Options say how to join a job's rendezvous.
type Options struct {
	// URL is "env://", "tcp://host:port" or "file:///path"; see ParseURL.
	URL string
	// Rank and Size are this process's rank and the world size; -1 takes
	// them from the launcher's environment (see FromEnv). Size 0 is an
	// error, not a default.
	Rank, Size int
	// Timeout bounds Join, and then every store operation whose context has
	// no earlier deadline; 0 means collective.DefaultTimeout.
	Timeout time.Duration
	// Identity names this process in errors other ranks see; "" means
	// "hostname/pid N".
	Identity string
	// JobID keeps jobs that share a store apart: a TCP store refuses
	// clients with another JobID, and registration keys are per job.
	JobID string
	// Token is the job's secret, which a TCP store's clients prove they
	// hold; empty means JobID is the secret.
	Token []byte
	// External says a launcher already hosts the TCP store at the URL's
	// address, so rank 0 connects to it like every other rank instead of
	// trying to host its own. env:// also sets it from
	// TORCHELASTIC_USE_AGENT_STORE. Without it, a rank 0 that finds the
	// port taken connects to whatever holds it, which works for a launcher's
	// store and fails clearly for anything else (see the package doc).
	External bool
	// Torch says the store at the URL's address is torch.distributed's
	// c10d TCPStore (torchrun's agent hosts one), spoken to through
	// DialTorch, with distbench's keys under "distbench/", then
	// TORCHELASTIC_RUN_ID and TORCHELASTIC_RESTART_COUNT where set, so
	// that workers torchrun restarts do not meet their predecessors'
	// keys. It implies
	// External. env:// also sets it from TORCHELASTIC_USE_AGENT_STORE, as
	// torch's own env:// rendezvous does.
	Torch bool
	// Getenv reads the environment; nil means os.Getenv. Tests set it.
	Getenv func(string) string
}

// Session is one process's membership in a job: its rank, the world size,
// and the store all ranks share. Rank 0's session may also host the
// store's server.
type Session struct {
	store     driver.Store
	server    *Server // when this process hosts the store
	rank      int
	size      int
	localRank int
	identity  string
	timeout   time.Duration

	closeOnce sync.Once
	closeErr  error
}

// Store is the job's store, for exchanging addresses and the like.
func (s *Session) Store() driver.Store { return s.store }

// Rank is this process's rank in 0..Size-1.
func (s *Session) Rank() int { return s.rank }

// Size is the world size.
func (s *Session) Size() int { return s.size }

// LocalRank is this process's rank among those on its host: from the
// launcher's environment when the rank came from there too, otherwise
// counted from the host names the ranks registered, in rank order.
func (s *Session) LocalRank() int { return s.localRank }

// Identity is the name other ranks see for this process in errors.
func (s *Session) Identity() string { return s.identity }

// Close leaves the job. Where this session hosts the store, Close first
// waits (up to the timeout) until every other rank has closed its
// connection, so that the store does not vanish under a rank finishing a
// moment later; in one process, close rank 0's session last.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown(s.timeout) })
	return s.closeErr
}

// FailedDrain bounds how long a rank 0 whose job failed keeps serving the
// store's clients at the end (Abandon): part of the bound on how long
// after a fault every rank ends (docs/design/faults.md).
const FailedDrain = 250 * time.Millisecond

// Abandon ends the session of a job that failed. It is Close, but a store
// hosted here serves its clients for at most FailedDrain more rather than
// the session's timeout: a stopped rank would never leave, and the ranks
// still alive are ending too. Its error, about clients dropped, is of no
// interest beside the failure's.
func (s *Session) Abandon() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown(min(s.timeout, FailedDrain)) })
	return s.closeErr
}

func (s *Session) shutdown(drain time.Duration) error {
	err := s.store.Close()
	if s.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		if e := s.server.Shutdown(ctx); err == nil {
			err = e
		}
	}
	return err
}

// abort ends a failed Join. Where this process hosts the store, it keeps
// serving for up to grace, until every rank has come and gone, so that the
// failure's verdict reaches ranks that have yet to connect.
func (s *Session) abort(grace time.Duration) {
	s.store.Close()
	if s.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		s.server.linger(ctx, s.size)
		s.server.Close()
	}
}

// joinError puts the joining rank in front of what went wrong.
type joinError struct {
	rank, size int
	identity   string
	where      string
	err        error
}

func (e *joinError) Error() string {
	return fmt.Sprintf("rendezvous: rank %d of %d (%s) at %s: %s",
		e.rank, e.size, e.identity, e.where, strings.TrimPrefix(e.err.Error(), "rendezvous: "))
}

func (e *joinError) Unwrap() error { return e.err }

// wrapped is fmt.Errorf("msg: %w", err) without repeating err's package prefix.
type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string {
	return e.msg + ": " + strings.TrimPrefix(e.err.Error(), "rendezvous: ")
}
func (e *wrapped) Unwrap() error { return e.err }

// Join connects this process to its job's store, registers its rank, and
// returns once all Size ranks have registered, as
// torch.distributed.init_process_group does. A rank claimed twice, or a
// world size that differs from the first arrival's, fails every rank at
// once (a *DuplicateRankError or *SizeMismatchError naming both parties);
// ranks that do not arrive before the timeout are listed in a
// *MissingRanksError.
//
// For tcp:// and env://, rank 0 hosts the store's server at the address
// unless o.External says a launcher does; every rank, rank 0 included,
// connects as a client, retrying until the timeout since rank 0 may start
// last.
func Join(ctx context.Context, o Options) (*Session, error) {
	start := time.Now()
	ep, err := ParseURL(o.URL)
	if err != nil {
		return nil, err
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	timeout := o.Timeout
	switch {
	case timeout < 0:
		return nil, fmt.Errorf("rendezvous: %w", collective.Invalidf("negative timeout %v", timeout))
	case timeout == 0:
		timeout = collective.DefaultTimeout
	}

	rank, size, localRank := o.Rank, o.Size, -1
	if rank < 0 || size < 0 {
		info, err := FromEnv(getenv)
		if err != nil {
			return nil, err
		}
		if rank < 0 {
			// The launcher's local rank describes the launcher's rank only.
			rank, localRank = info.Rank, info.LocalRank
		}
		if size < 0 {
			size = info.Size
		}
	}
	switch {
	case size < 1:
		return nil, fmt.Errorf("rendezvous: %w", collective.Invalidf("world size %d: must be at least 1, or -1 to read it from the environment", size))
	case rank >= size:
		return nil, fmt.Errorf("rendezvous: %w", collective.Invalidf("rank %d out of range for world size %d (accepted: 0..%d, or -1 to read it from the environment)", rank, size, size-1))
	}

	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	identity := o.Identity
	if identity == "" {
		identity = fmt.Sprintf("%s/pid %d", host, os.Getpid())
	}
	external, torch := o.External, o.Torch
	where := ep.String()
	if ep.Scheme == "env" {
		var info EnvInfo
		if err := info.readStoreVars(func(k string) string { return strings.TrimSpace(getenv(k)) }); err != nil {
			return nil, err
		}
		if err := info.resolveMaster(func(k string) string { return strings.TrimSpace(getenv(k)) }); err != nil {
			return nil, err
		}
		ep.Addr = net.JoinHostPort(info.MasterAddr, strconv.Itoa(info.MasterPort))
		external = external || info.AgentStore
		torch = torch || info.AgentStore
		where = "env:// (" + ep.Addr + ")"
		if torch {
			where = "env:// (torch's TCPStore at " + ep.Addr + ")"
		}
	}

	s := &Session{rank: rank, size: size, localRank: localRank, identity: identity, timeout: timeout}
	wrap := func(err error) error {
		return &joinError{rank: rank, size: size, identity: identity, where: where, err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.open(ctx, ep, o.JobID, o.Token, external, torch, agentPrefix(func(k string) string { return strings.TrimSpace(getenv(k)) })); err != nil {
		return nil, wrap(err)
	}
	me := member{Rank: rank, Size: size, Identity: identity, Host: host}
	if err := s.register(ctx, start, me, keyPrefix(o.JobID)); err != nil {
		s.abort(min(timeout, 5*time.Second))
		return nil, wrap(err)
	}
	return s, nil
}

func (s *Session) open(ctx context.Context, ep Endpoint, jobID string, token []byte, external, torch bool, torchPrefix string) error {
	if torch && ep.Scheme != "file" {
		st, err := DialTorch(ctx, ep.Addr, TorchOptions{Timeout: s.timeout, Prefix: torchPrefix})
		if err != nil {
			return err
		}
		s.store = st
		return nil
	}
	if ep.Scheme == "file" {
		st, err := OpenFile(ctx, ep.Path, FileOptions{Timeout: s.timeout, Users: s.size})
		if err != nil {
			return err
		}
		s.store = st
		return nil
	}
	addr := ep.Addr
	if _, port, _ := net.SplitHostPort(addr); port == "0" && (s.size > 1 || s.rank != 0 || external) {
		return collective.Invalidf("port 0 names no store the other ranks could find; give a port")
	}
	inUse := false
	if s.rank == 0 && !external {
		srv, err := Listen(addr, ServerOptions{JobID: jobID, Token: token})
		switch {
		case err == nil:
			s.server = srv
			addr = srv.Addr()
		case errors.Is(err, syscall.EADDRINUSE):
			// Someone holds the port: a launcher's store that nobody said
			// was External, another process that also claims rank 0, or
			// something else. Connect, and let the handshake and the
			// registration tell which, each with its own error.
			inUse = true
		default:
			return err
		}
	}
	c, err := Dial(ctx, addr, ClientOptions{JobID: jobID, Token: token, Timeout: s.timeout})
	if err != nil {
		if s.server != nil {
			s.server.Close()
		}
		switch {
		case inUse:
			err = &wrapped{fmt.Sprintf("could not host the store: %s is in use, and not by this job's store", addr), err}
		case s.rank != 0 && !external && errors.Is(err, collective.ErrTimeout):
			err = fmt.Errorf("%w; rank 0 hosts the store there: has it started, with this address?", err)
		}
		return err
	}
	s.store = c
	return nil
}
