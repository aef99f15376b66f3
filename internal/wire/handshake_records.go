// The handshake's records: encoding, and decoding that checks every
// length before it reads, since the bytes come from a peer not yet
// authenticated.

package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Record types.
const (
	recHello  = 1
	recAuth   = 2
	recAccept = 3
	recReject = 4
)

// Reject codes, so that the refused side can match the sentinel.
var rejectCodes = []error{1: ErrJobMismatch, 2: ErrSizeMismatch, 3: ErrRankMismatch, 4: ErrAuth, 5: ErrVersion, 6: ErrHandshake, 7: ErrBadMagic, 8: ErrTooLarge, 9: ErrServiceMismatch}

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
	service    Service
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
	var b [9]byte
	binary.LittleEndian.PutUint32(b[0:], h.rank)
	binary.LittleEndian.PutUint32(b[4:], h.size)
	b[8] = byte(h.service)
	r.put(b[:])
	r.put(h.nonce[:])
	r.put([]byte{byte(len(h.jobID))})
	r.put([]byte(h.jobID))
	r.finish()
}

func decodeHello(body []byte) (hello, error) {
	var h hello
	const fixed = 9 + NonceSize + 1
	if len(body) < fixed {
		return h, fmt.Errorf("%w: hello of %d bytes, want at least %d", ErrHandshake, len(body), fixed)
	}
	h.rank = binary.LittleEndian.Uint32(body[0:])
	h.size = binary.LittleEndian.Uint32(body[4:])
	h.service = Service(body[8])
	copy(h.nonce[:], body[9:9+NonceSize])
	n := int(body[9+NonceSize])
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
