package rendezvous

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// The TCP store's wire format. Everything is big-endian.
//
// A connection opens with internal/wire's handshake for the store service
// (see auth.go), then carries frames, each a u32 payload length followed by
// the payload:
//
//	request   op u8 | id u64 | body
//	  set     key | value
//	  get     wait-ms u32 | key
//	  add     delta i64 | key
//	  wait    wait-ms u32 | count u16 | count × key
//	  cancel  (empty; id names the request to cancel; no answer)
//	response  status u8 | op u8 | id u64 | body
//	  ok      set, wait: empty; get: the value; add: the sum as i64
//	  timeout, error: a UTF-8 message
//
// key is u16 length + bytes, value u32 length + bytes. Every length is checked
// against Limits before anything is allocated for it, so a hostile or broken
// peer costs at most one frame of the configured size.
const (
	opSet    byte = 1
	opGet    byte = 2
	opAdd    byte = 3
	opWait   byte = 4
	opCancel byte = 5
)

const (
	statusOK      byte = 0
	statusTimeout byte = 1
	statusError   byte = 2
)

// maxMessage bounds the text of a timeout or error answer; longer ones are
// cut, so that a wait on thousands of keys cannot make a huge answer.
const maxMessage = 2048

func opName(op byte) string {
	switch op {
	case opSet:
		return "set"
	case opGet:
		return "get"
	case opAdd:
		return "add"
	case opWait:
		return "wait"
	case opCancel:
		return "cancel"
	}
	return fmt.Sprintf("op %d", op)
}

// Limits bound what one store accepts. The zero value of a field means its default.
type Limits struct {
	MaxKeySize   int // bytes; default 4 KiB, at most 65535
	MaxValueSize int // bytes; default 4 MiB
	MaxWaitKeys  int // keys in one Wait; default 4096, at most 65535
}

// Default limits. Rendezvous values are addresses and small blobs (an NCCL
// unique id is 128 bytes); the value limit leaves room for much more.
const (
	DefaultMaxKeySize   = 4 << 10
	DefaultMaxValueSize = 4 << 20
	DefaultMaxWaitKeys  = 4096
)

func (l Limits) withDefaults() Limits {
	if l.MaxKeySize <= 0 {
		l.MaxKeySize = DefaultMaxKeySize
	}
	if l.MaxKeySize > math.MaxUint16 {
		l.MaxKeySize = math.MaxUint16
	}
	if l.MaxValueSize <= 0 {
		l.MaxValueSize = DefaultMaxValueSize
	}
	if l.MaxWaitKeys <= 0 {
		l.MaxWaitKeys = DefaultMaxWaitKeys
	}
	if l.MaxWaitKeys > math.MaxUint16 {
		l.MaxWaitKeys = math.MaxUint16
	}
	return l
}

// maxRequest is the largest request frame: a set of the largest key and
// value. A wait must fit in the same size.
func (l Limits) maxRequest() int { return 32 + l.MaxKeySize + l.MaxValueSize }

// maxResponse is the largest response frame.
func (l Limits) maxResponse() int { return 32 + max(l.MaxValueSize, maxMessage) }

func (l Limits) checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty key")
	case len(key) > l.MaxKeySize:
		return fmt.Errorf("key of %d bytes exceeds the %d-byte limit", len(key), l.MaxKeySize)
	}
	return nil
}

func (l Limits) checkValue(n int) error {
	if n > l.MaxValueSize {
		return fmt.Errorf("value of %d bytes exceeds the %d-byte limit", n, l.MaxValueSize)
	}
	return nil
}

type request struct {
	op    byte
	id    uint64
	wait  time.Duration // get, wait: how long the server may wait
	delta int64         // add
	key   string        // set, get, add
	value []byte        // set; aliases the frame it was decoded from
	keys  []string      // wait
}

type response struct {
	status byte
	op     byte
	id     uint64
	body   []byte // aliases the frame it was decoded from
}

// readFrame reads one frame, checking its length against limit before
// allocating. It reuses buf when it is large enough.
func readFrame(r io.Reader, limit int, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	switch {
	case n == 0:
		return nil, errors.New("empty frame")
	case uint64(n) > uint64(limit):
		return nil, &frameTooLargeError{n: int64(n), limit: limit}
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// frameTooLargeError is a frame header announcing more than the limit;
// the frame's payload has not been read.
type frameTooLargeError struct {
	n     int64
	limit int
}

func (e *frameTooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes exceeds the %d-byte limit", e.n, e.limit)
}

// beginFrame appends a placeholder length; endFrame fills it in.
func beginFrame(dst []byte) ([]byte, int) { return append(dst, 0, 0, 0, 0), len(dst) }

func endFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

func waitMillis(d time.Duration) uint32 {
	ms := d.Milliseconds()
	switch {
	case ms < 0:
		return 0
	case ms > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(ms)
}

func appendKey(dst []byte, key string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(key)))
	return append(dst, key...)
}

// appendRequest appends r as one frame. The caller has checked r against
// the limits.
func appendRequest(dst []byte, r *request) []byte {
	dst, start := beginFrame(dst)
	dst = append(dst, r.op)
	dst = binary.BigEndian.AppendUint64(dst, r.id)
	switch r.op {
	case opSet:
		dst = appendKey(dst, r.key)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.value)))
		dst = append(dst, r.value...)
	case opGet:
		dst = binary.BigEndian.AppendUint32(dst, waitMillis(r.wait))
		dst = appendKey(dst, r.key)
	case opAdd:
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.delta))
		dst = appendKey(dst, r.key)
	case opWait:
		dst = binary.BigEndian.AppendUint32(dst, waitMillis(r.wait))
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.keys)))
		for _, k := range r.keys {
			dst = appendKey(dst, k)
		}
	}
	return endFrame(dst, start)
}

// requestSize is the payload size appendRequest would write.
func requestSize(r *request) int {
	n := 1 + 8
	switch r.op {
	case opSet:
		n += 2 + len(r.key) + 4 + len(r.value)
	case opGet:
		n += 4 + 2 + len(r.key)
	case opAdd:
		n += 8 + 2 + len(r.key)
	case opWait:
		n += 4 + 2
		for _, k := range r.keys {
			n += 2 + len(k)
		}
	}
	return n
}

func appendResponse(dst []byte, r *response) []byte {
	dst, start := beginFrame(dst)
	dst = append(dst, r.status, r.op)
	dst = binary.BigEndian.AppendUint64(dst, r.id)
	dst = append(dst, r.body...)
	return endFrame(dst, start)
}

// decoder reads fields from a payload; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("truncated %s: need %d bytes, have %d", what, n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8(what string) byte {
	if p := d.take(1, what); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u16(what string) uint16 {
	if p := d.take(2, what); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if p := d.take(4, what); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if p := d.take(8, what); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) key(l Limits) string {
	n := int(d.u16("key length"))
	if d.err != nil {
		return ""
	}
	if n == 0 {
		d.fail("empty key")
		return ""
	}
	if n > l.MaxKeySize {
		d.fail("key of %d bytes exceeds the %d-byte limit", n, l.MaxKeySize)
		return ""
	}
	return string(d.take(n, "key"))
}

// decodeRequest parses one request payload. On error the request's id is
// still set when the payload was long enough to hold one, so that the server
// can say which request it refused.
func decodeRequest(p []byte, l Limits) (request, error) {
	d := decoder{b: p}
	var r request
	r.op = d.u8("op")
	r.id = d.u64("request id")
	switch r.op {
	case opSet:
		r.key = d.key(l)
		n := d.u32("value length")
		if d.err == nil && uint64(n) > uint64(l.MaxValueSize) {
			d.fail("value of %d bytes exceeds the %d-byte limit", n, l.MaxValueSize)
		}
		r.value = d.take(int(n), "value")
	case opGet:
		r.wait = time.Duration(d.u32("wait")) * time.Millisecond
		r.key = d.key(l)
	case opAdd:
		r.delta = int64(d.u64("delta"))
		r.key = d.key(l)
	case opWait:
		r.wait = time.Duration(d.u32("wait")) * time.Millisecond
		n := int(d.u16("key count"))
		switch {
		case d.err != nil:
		case n > l.MaxWaitKeys:
			d.fail("wait on %d keys exceeds the limit of %d", n, l.MaxWaitKeys)
		case n*3 > len(d.b):
			// Each key takes at least 3 bytes: refuse before allocating.
			d.fail("truncated wait: %d keys cannot fit in %d bytes", n, len(d.b))
		default:
			r.keys = make([]string, 0, n)
			for range n {
				k := d.key(l)
				if d.err != nil {
					break
				}
				r.keys = append(r.keys, k)
			}
		}
	case opCancel:
	default:
		d.fail("unknown op %d", r.op)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the end of a %s request", len(d.b), opName(r.op))
	}
	if d.err != nil {
		return r, fmt.Errorf("bad request: %w", d.err)
	}
	return r, nil
}

// decodeResponse parses one response payload and checks its body against
// what its op and status allow.
func decodeResponse(p []byte, l Limits) (response, error) {
	d := decoder{b: p}
	var r response
	r.status = d.u8("status")
	r.op = d.u8("op")
	r.id = d.u64("request id")
	if d.err != nil {
		return r, fmt.Errorf("bad response: %w", d.err)
	}
	r.body = d.b
	n := len(r.body)
	var err error
	switch r.status {
	case statusOK:
		switch r.op {
		case opSet, opWait:
			if n != 0 {
				err = fmt.Errorf("%d unexpected bytes in a %s answer", n, opName(r.op))
			}
		case opGet:
			err = l.checkValue(n)
		case opAdd:
			if n != 8 {
				err = fmt.Errorf("add answer of %d bytes, want 8", n)
			}
		default:
			err = fmt.Errorf("answer for unknown op %d", r.op)
		}
	case statusTimeout, statusError:
		switch {
		case r.op < opSet || r.op > opWait:
			err = fmt.Errorf("answer for unknown op %d", r.op)
		case n > maxMessage:
			err = fmt.Errorf("message of %d bytes exceeds the %d-byte limit", n, maxMessage)
		case !utf8.Valid(r.body):
			err = errors.New("message is not UTF-8")
		}
	default:
		err = fmt.Errorf("unknown status %d", r.status)
	}
	if err != nil {
		return r, fmt.Errorf("bad response: %w", err)
	}
	return r, nil
}

// clip cuts a message to maxMessage bytes on a rune boundary.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxMessage {
		return s
	}
	s = s[:maxMessage-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
