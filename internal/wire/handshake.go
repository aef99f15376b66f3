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
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
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

// HandshakeConfig describes this side of a handshake.
type HandshakeConfig struct {
	JobID string // at most MaxJobID bytes
	Token []byte // the job's shared secret; must not be empty
	Rank  int    // this side's rank
	Size  int    // the world size
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

// Record types.
const (
	recHello  = 1
	recAuth   = 2
	recAccept = 3
	recReject = 4
)

// Reject codes, so that the refused side can match the sentinel.
var rejectCodes = []error{1: ErrJobMismatch, 2: ErrSizeMismatch, 3: ErrRankMismatch, 4: ErrAuth, 5: ErrVersion, 6: ErrHandshake, 7: ErrBadMagic, 8: ErrTooLarge}

func codeOf(err error) byte {
	for c, s := range rejectCodes {
		if s != nil && errors.Is(err, s) {
			return byte(c)
		}
	}
	return 6
}

// hello is the first record each side sends.
type hello struct {
	rank, size uint32
	nonce      [NonceSize]byte
	jobID      string
}

// record is an encoded handshake record: header and body.
type record struct {
	buf [recordHeaderSize + maxRecordBody]byte
	n   int
}

func (r *record) bytes() []byte { return r.buf[:r.n] }

func (r *record) start(typ byte) {
	binary.LittleEndian.PutUint16(r.buf[0:], Magic)
	r.buf[2] = Version
	r.buf[3] = typ
	r.n = recordHeaderSize
}

func (r *record) put(b []byte) { r.n += copy(r.buf[r.n:], b) }

func (r *record) finish() {
	binary.LittleEndian.PutUint16(r.buf[4:], uint16(r.n-recordHeaderSize))
}

func encodeHello(r *record, h *hello) {
	r.start(recHello)
	var b [8]byte
	binary.LittleEndian.PutUint32(b[0:], h.rank)
	binary.LittleEndian.PutUint32(b[4:], h.size)
	r.put(b[:])
	r.put(h.nonce[:])
	r.put([]byte{byte(len(h.jobID))})
	r.put([]byte(h.jobID))
	r.finish()
}

func decodeHello(body []byte) (hello, error) {
	var h hello
	const fixed = 8 + NonceSize + 1
	if len(body) < fixed {
		return h, fmt.Errorf("%w: hello of %d bytes, want at least %d", ErrHandshake, len(body), fixed)
	}
	h.rank = binary.LittleEndian.Uint32(body[0:])
	h.size = binary.LittleEndian.Uint32(body[4:])
	copy(h.nonce[:], body[8:8+NonceSize])
	n := int(body[8+NonceSize])
	if n > MaxJobID {
		return h, fmt.Errorf("%w: job id of %d bytes exceeds the %d-byte limit", ErrHandshake, n, MaxJobID)
	}
	if len(body) != fixed+n {
		return h, fmt.Errorf("%w: hello of %d bytes, want %d for a %d-byte job id", ErrHandshake, len(body), fixed+n, n)
	}
	if h.size < 1 || h.size > MaxWorldSize {
		return h, fmt.Errorf("%w: peer claims world size %d (accepted: 1..%d)", ErrSizeMismatch, h.size, MaxWorldSize)
	}
	if h.rank >= h.size {
		return h, fmt.Errorf("%w: peer claims rank %d of a world of %d", ErrRankMismatch, h.rank, h.size)
	}
	h.jobID = string(body[fixed:])
	return h, nil
}

func encodeAuth(r *record, mac *[MACSize]byte) {
	r.start(recAuth)
	r.put(mac[:])
	r.finish()
}

func decodeAuth(body []byte) ([MACSize]byte, error) {
	var mac [MACSize]byte
	if len(body) != MACSize {
		return mac, fmt.Errorf("%w: auth record of %d bytes, want %d", ErrHandshake, len(body), MACSize)
	}
	copy(mac[:], body)
	return mac, nil
}

func encodeReject(r *record, err error) {
	r.start(recReject)
	r.put([]byte{codeOf(err)})
	r.put([]byte(Sanitize(err.Error(), MaxReason)))
	r.finish()
}

// refusal is the reason a peer sent with its reject record.
type refusal struct {
	kind error
	text string
}

func (r *refusal) Error() string { return r.text }
func (r *refusal) Unwrap() error { return r.kind }

func decodeReject(body []byte) error {
	if len(body) < 1 || len(body) > 1+MaxReason {
		return fmt.Errorf("%w: reject record of %d bytes", ErrHandshake, len(body))
	}
	kind := ErrHandshake
	if c := int(body[0]); c < len(rejectCodes) && rejectCodes[c] != nil {
		kind = rejectCodes[c]
	}
	text := Sanitize(string(body[1:]), MaxReason)
	if text == "" {
		text = kind.Error()
	}
	return &refusal{kind: kind, text: text}
}

// Sanitize makes peer-supplied text (a reject reason, an abort frame's)
// safe to print in one log line: valid UTF-8, no control characters, at
// most max bytes, cut at a character boundary.
func Sanitize(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// readRecord reads one record into buf and returns its type and body, a
// slice of buf. It reads the body only once its length has been checked, so
// a hostile length costs nothing.
func readRecord(r io.Reader, buf *[maxRecordBody]byte) (byte, []byte, error) {
	var h [recordHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if m := binary.LittleEndian.Uint16(h[0:]); m != Magic {
		return 0, nil, fmt.Errorf("%w %#04x (want %#04x): not a distbench peer", ErrBadMagic, m, Magic)
	}
	if v := h[2]; v != Version {
		return 0, nil, fmt.Errorf("%w: peer speaks protocol version %d, this side %d", ErrVersion, v, Version)
	}
	typ := h[3]
	if typ < recHello || typ > recReject {
		return 0, nil, fmt.Errorf("%w: unknown record type %d", ErrHandshake, typ)
	}
	n := int(binary.LittleEndian.Uint16(h[4:]))
	if n > maxRecordBody {
		return 0, nil, fmt.Errorf("%w: record of %d bytes exceeds the %d-byte limit", ErrTooLarge, n, maxRecordBody)
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return typ, buf[:n], nil
}

// macFor computes HMAC-SHA256(token, label ‖ role ‖ transcript). Every field
// has a fixed size or a length prefix, so no two transcripts encode alike.
func macFor(token []byte, role byte, jobID string, clientRank, serverRank, size uint32, nc, ns *[NonceSize]byte) [MACSize]byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte("distbench wire handshake v1"))
	var b [14]byte
	b[0] = role
	b[1] = byte(len(jobID))
	binary.LittleEndian.PutUint32(b[2:], clientRank)
	binary.LittleEndian.PutUint32(b[6:], serverRank)
	binary.LittleEndian.PutUint32(b[10:], size)
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
		errors.Is(err, ErrRankMismatch), errors.Is(err, ErrAuth):
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
	case h.jobID != s.c.JobID:
		return fmt.Errorf("%w: this side is job %q, the peer says %q", ErrJobMismatch, s.c.JobID, h.jobID)
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
	mine := hello{rank: uint32(c.Rank), size: uint32(c.Size), nonce: nc, jobID: c.JobID}
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
	want := macFor(c.Token, roleServer, c.JobID, mine.rank, theirs.rank, mine.size, &nc, &theirs.nonce)
	if !hmac.Equal(got[:], want[:]) {
		return s.refuse(fmt.Errorf("%w: the peer's MAC does not match this job's token (a different token, or not a rank of this job)", ErrAuth))
	}

	mac := macFor(c.Token, roleClient, c.JobID, mine.rank, theirs.rank, mine.size, &nc, &theirs.nonce)
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
	mine := hello{rank: uint32(c.Rank), size: uint32(c.Size), nonce: ns, jobID: c.JobID}
	var h record
	encodeHello(&h, &mine)
	mac := macFor(c.Token, roleServer, c.JobID, theirs.rank, mine.rank, mine.size, &theirs.nonce, &ns)
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
	want := macFor(c.Token, roleClient, c.JobID, theirs.rank, mine.rank, mine.size, &theirs.nonce, &ns)
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
