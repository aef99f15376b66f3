package wire

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Handshake limits.
const (
	// NonceSize is the size of each side's random challenge.
	NonceSize = 32
	// MACSize is the size of an HMAC-SHA256.
	MACSize = sha256.Size
	// MaxJobID bounds the job id, in bytes.
	MaxJobID = 128
	// MaxWorldSize bounds the world size a hello may claim.
	MaxWorldSize = 1 << 20
	// MaxReason bounds the text of a reject record.
	MaxReason = 256
	// DefaultHandshakeTimeout bounds a handshake when the config says nothing
	// shorter and the context has no earlier deadline.
	DefaultHandshakeTimeout = 10 * time.Second

	recordHeaderSize = 6
	maxRecordBody    = 512
)

// Sentinel errors of the handshake; test with errors.Is. They match on both
// sides: the side that refused and the side that was refused.
var (
	// ErrJobMismatch: the peer belongs to another job.
	ErrJobMismatch = errors.New("job id mismatch")
	// ErrSizeMismatch: the peer has another world size.
	ErrSizeMismatch = errors.New("world size mismatch")
	// ErrRankMismatch: the peer is not the rank expected here.
	ErrRankMismatch = errors.New("unexpected rank")
	// ErrServiceMismatch: the peer wants another service (a mesh peer that
	// reached a store, say).
	ErrServiceMismatch = errors.New("service mismatch")
	// ErrAuth: a MAC did not verify: the peer does not hold this job's token,
	// or replayed an old handshake.
	ErrAuth = errors.New("authentication failed")
	// ErrHandshake: a malformed or unexpected record, or I/O failure.
	ErrHandshake = errors.New("handshake failed")
	// ErrPeerClosed (with ErrHandshake): the peer closed or reset the
	// connection without saying why. A listener shedding a flood of
	// connections does that to the oldest handshakes, so a dialer may retry.
	ErrPeerClosed = errors.New("peer closed the connection mid-handshake (it may have refused us)")
)

// Service names what a connection is for. Both sides must want the same
// one, and it is in the MAC, so that a handshake made for one service cannot
// be relayed to another that shares the job's token.
type Service uint8

// The services that authenticate with the handshake.
const (
	// ServiceMesh is a connection of the TCP mesh between ranks
	// (internal/transport); the zero value.
	ServiceMesh Service = 0
	// ServiceStore is a connection to the job's rendezvous store
	// (internal/rendezvous).
	ServiceStore Service = 1
	// ServicePS is a worker's connection to a parameter server
	// (strategies/ps).
	ServicePS Service = 2

	maxService = ServicePS
)

func (s Service) String() string {
	switch s {
	case ServiceMesh:
		return "mesh"
	case ServiceStore:
		return "store"
	case ServicePS:
		return "ps"
	}
	return fmt.Sprintf("service %d", uint8(s))
}

// HandshakeConfig describes this side of a handshake.
type HandshakeConfig struct {
	// Service is what the connection is for; the zero value is the mesh.
	Service Service
	JobID   string // at most MaxJobID bytes
	Token   []byte // the job's shared secret; must not be empty
	Rank    int    // this side's rank
	Size    int    // the world size
	// Timeout bounds the whole handshake; 0 means DefaultHandshakeTimeout.
	// A context deadline that comes sooner wins.
	Timeout time.Duration
	// Rand is the nonce source; nil means crypto/rand. Tests only.
	Rand io.Reader
}

// Validate checks the configuration.
func (c *HandshakeConfig) Validate() error {
	switch {
	case len(c.Token) == 0:
		return errors.New("wire: empty job token; every rank of a job must share a non-empty token")
	case len(c.JobID) > MaxJobID:
		return fmt.Errorf("wire: job id of %d bytes exceeds the %d-byte limit", len(c.JobID), MaxJobID)
	case c.Size < 1 || c.Size > MaxWorldSize:
		return fmt.Errorf("wire: world size %d out of range (accepted: 1..%d)", c.Size, MaxWorldSize)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("wire: rank %d out of range for world size %d", c.Rank, c.Size)
	case c.Timeout < 0:
		return fmt.Errorf("wire: negative handshake timeout %v", c.Timeout)
	case c.Service > maxService:
		return fmt.Errorf("wire: unknown %v", c.Service)
	}
	return nil
}

// HandshakeError is a failed handshake: with whom, and what was wrong.
type HandshakeError struct {
	// Peer names the other side: "rank 2 (10.0.0.3:4123)" where the rank is
	// known, its address otherwise.
	Peer string
	// ByPeer is true when the other side refused us; Err then carries its
	// reason (and still matches the sentinels with errors.Is).
	ByPeer bool
	Err    error
}

func (e *HandshakeError) Error() string {
	if e.ByPeer {
		return fmt.Sprintf("wire: handshake with %s: refused by peer: %v", e.Peer, e.Err)
	}
	return fmt.Sprintf("wire: handshake with %s: %v", e.Peer, e.Err)
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// macFor computes HMAC-SHA256(token, label ‖ role ‖ transcript). Every field
// has a fixed size or a length prefix, so no two transcripts encode alike.
func macFor(token []byte, role byte, svc Service, jobID string, clientRank, serverRank, size uint32, nc, ns *[NonceSize]byte) [MACSize]byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte("distbench wire handshake v2"))
	var b [15]byte
	b[0] = role
	b[1] = byte(svc)
	b[2] = byte(len(jobID))
	binary.LittleEndian.PutUint32(b[3:], clientRank)
	binary.LittleEndian.PutUint32(b[7:], serverRank)
	binary.LittleEndian.PutUint32(b[11:], size)
	m.Write(b[:])
	m.Write([]byte(jobID))
	m.Write(nc[:])
	m.Write(ns[:])
	var out [MACSize]byte
	m.Sum(out[:0])
	return out
}

const (
	roleClient = 'c'
	roleServer = 's'
)

// session is one handshake in progress on conn.
type session struct {
	ctx     context.Context
	conn    net.Conn
	c       *HandshakeConfig
	peer    string // for errors
	start   time.Time
	timeout time.Duration
	buf     [maxRecordBody]byte
	out     record
}

// begin arms conn's deadline (the sooner of the timeout and ctx's) and makes
// ctx's cancellation interrupt blocked I/O. The returned func disarms both.
func begin(ctx context.Context, conn net.Conn, c *HandshakeConfig, peer string) (*session, func()) {
	s := &session{ctx: ctx, conn: conn, c: c, peer: peer, start: time.Now(), timeout: c.Timeout}
	if s.timeout == 0 {
		s.timeout = DefaultHandshakeTimeout
	}
	deadline := s.start.Add(s.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	var mu sync.Mutex
	finished := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			conn.SetDeadline(time.Unix(1, 0)) // in the past: wakes blocked I/O
		}
	})
	return s, func() {
		mu.Lock()
		finished = true
		mu.Unlock()
		stop()
		conn.SetDeadline(time.Time{})
	}
}

// fail wraps err as a HandshakeError. I/O errors become ErrHandshake with a
// reason a person can act on.
func (s *session) fail(err error, byPeer bool) error {
	var ioErr error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && s.ctx.Err() != nil:
		ioErr = fmt.Errorf("%w: %v", ErrHandshake, s.ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		ioErr = fmt.Errorf("%w: no answer within %v", ErrHandshake, time.Since(s.start).Round(time.Millisecond))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		ioErr = fmt.Errorf("%w: %w", ErrHandshake, ErrPeerClosed)
	case errors.Is(err, ErrBadMagic), errors.Is(err, ErrVersion), errors.Is(err, ErrTooLarge),
		errors.Is(err, ErrHandshake), errors.Is(err, ErrJobMismatch), errors.Is(err, ErrSizeMismatch),
		errors.Is(err, ErrRankMismatch), errors.Is(err, ErrAuth), errors.Is(err, ErrServiceMismatch):
		ioErr = err
	default:
		ioErr = fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	return &HandshakeError{Peer: s.peer, ByPeer: byPeer, Err: ioErr}
}

// refuse tells the peer why, best effort, and returns the local error.
func (s *session) refuse(err error) error {
	encodeReject(&s.out, err)
	s.conn.Write(s.out.bytes())
	return s.fail(err, false)
}

func (s *session) send(recs ...*record) error {
	var all []byte
	for _, r := range recs {
		all = append(all, r.bytes()...)
	}
	_, err := s.conn.Write(all)
	return err
}

// expect reads the next record, which must be of type want; a reject record
// becomes the peer's refusal.
func (s *session) expect(want byte) ([]byte, error) {
	typ, body, err := readRecord(s.conn, &s.buf)
	if err != nil {
		if errors.Is(err, ErrBadMagic) || errors.Is(err, ErrVersion) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrHandshake) {
			return nil, s.refuse(err)
		}
		return nil, s.fail(err, false)
	}
	if typ == recReject {
		return nil, s.fail(decodeReject(body), true)
	}
	if typ != want {
		return nil, s.refuse(fmt.Errorf("%w: got record type %d, want %d", ErrHandshake, typ, want))
	}
	return body, nil
}

func (s *session) nonce() ([NonceSize]byte, error) {
	var n [NonceSize]byte
	r := s.c.Rand
	if r == nil {
		r = rand.Reader
	}
	_, err := io.ReadFull(r, n[:])
	return n, err
}

// checkHello validates the peer's hello against this side's configuration.
func (s *session) checkHello(h *hello) error {
	switch {
	case h.service != s.c.Service:
		return fmt.Errorf("%w: this side opens a %v connection, the peer a %v one", ErrServiceMismatch, s.c.Service, h.service)
	case h.jobID != s.c.JobID:
		// Neither id is quoted: the refusal crosses the wire, and a job id
		// told to a stranger was once enough to reach a store keyed by it.
		return fmt.Errorf("%w: the peer belongs to another job (job ids differ; neither is shown)", ErrJobMismatch)
	case int(h.size) != s.c.Size:
		return fmt.Errorf("%w: this side has world size %d, the peer says %d", ErrSizeMismatch, s.c.Size, h.size)
	case int(h.rank) == s.c.Rank:
		return fmt.Errorf("%w: the peer claims rank %d, which is this side's own", ErrRankMismatch, h.rank)
	}
	return nil
}

// ClientHandshake runs the dialing side of the handshake on conn, which
// should reach rank peerRank. It returns nil once both sides have proved
// they hold the token and the peer has accepted; conn's deadline is then
// cleared. On failure it returns a *HandshakeError and leaves conn open for
// the caller to close.
func ClientHandshake(ctx context.Context, conn net.Conn, c HandshakeConfig, peerRank int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	s, end := begin(ctx, conn, &c, fmt.Sprintf("rank %d (%s)", peerRank, conn.RemoteAddr()))
	defer end()

	nc, err := s.nonce()
	if err != nil {
		return s.fail(err, false)
	}
	mine := hello{rank: uint32(c.Rank), size: uint32(c.Size), service: c.Service, nonce: nc, jobID: c.JobID}
	encodeHello(&s.out, &mine)
	if err := s.send(&s.out); err != nil {
		return s.fail(err, false)
	}

	body, err := s.expect(recHello)
	if err != nil {
		return err
	}
	theirs, err := decodeHello(body)
	if err != nil {
		return s.refuse(err)
	}
	if err := s.checkHello(&theirs); err != nil {
		return s.refuse(err)
	}
	if int(theirs.rank) != peerRank {
		return s.refuse(fmt.Errorf("%w: dialed expecting rank %d, reached rank %d", ErrRankMismatch, peerRank, theirs.rank))
	}

	body, err = s.expect(recAuth)
	if err != nil {
		return err
	}
	got, err := decodeAuth(body)
	if err != nil {
		return s.refuse(err)
	}
	want := macFor(c.Token, roleServer, c.Service, c.JobID, mine.rank, theirs.rank, mine.size, &nc, &theirs.nonce)
	if !hmac.Equal(got[:], want[:]) {
		return s.refuse(fmt.Errorf("%w: the peer's MAC does not match this job's token (a different token, or not a rank of this job)", ErrAuth))
	}

	mac := macFor(c.Token, roleClient, c.Service, c.JobID, mine.rank, theirs.rank, mine.size, &nc, &theirs.nonce)
	encodeAuth(&s.out, &mac)
	if err := s.send(&s.out); err != nil {
		return s.fail(err, false)
	}
	if _, err := s.expect(recAccept); err != nil {
		return err
	}
	return nil
}

// ServerHandshake runs the accepting side of the handshake on conn and
// returns the authenticated peer's rank. admit, if not nil, is asked about
// that rank once the peer has proved it holds the token; an error from it
// refuses the peer (wrap ErrRankMismatch to say so on both sides). On
// failure it returns a *HandshakeError and leaves conn open for the caller
// to close.
func ServerHandshake(ctx context.Context, conn net.Conn, c HandshakeConfig, admit func(rank int) error) (int, error) {
	if err := c.Validate(); err != nil {
		return -1, err
	}
	s, end := begin(ctx, conn, &c, conn.RemoteAddr().String())
	defer end()

	body, err := s.expect(recHello)
	if err != nil {
		return -1, err
	}
	theirs, err := decodeHello(body)
	if err != nil {
		return -1, s.refuse(err)
	}
	s.peer = fmt.Sprintf("rank %d (%s)", theirs.rank, conn.RemoteAddr())
	if err := s.checkHello(&theirs); err != nil {
		return -1, s.refuse(err)
	}

	ns, err := s.nonce()
	if err != nil {
		return -1, s.fail(err, false)
	}
	mine := hello{rank: uint32(c.Rank), size: uint32(c.Size), service: c.Service, nonce: ns, jobID: c.JobID}
	var h record
	encodeHello(&h, &mine)
	mac := macFor(c.Token, roleServer, c.Service, c.JobID, theirs.rank, mine.rank, mine.size, &theirs.nonce, &ns)
	encodeAuth(&s.out, &mac)
	if err := s.send(&h, &s.out); err != nil {
		return -1, s.fail(err, false)
	}

	body, err = s.expect(recAuth)
	if err != nil {
		return -1, err
	}
	got, err := decodeAuth(body)
	if err != nil {
		return -1, s.refuse(err)
	}
	want := macFor(c.Token, roleClient, c.Service, c.JobID, theirs.rank, mine.rank, mine.size, &theirs.nonce, &ns)
	if !hmac.Equal(got[:], want[:]) {
		return -1, s.refuse(fmt.Errorf("%w: the peer's MAC does not match this job's token (a different token, or a replayed handshake)", ErrAuth))
	}
	if admit != nil {
		if err := admit(int(theirs.rank)); err != nil {
			return -1, s.refuse(err)
		}
	}
	s.out.start(recAccept)
	s.out.finish()
	if err := s.send(&s.out); err != nil {
		return -1, s.fail(err, false)
	}
	return int(theirs.rank), nil
}
