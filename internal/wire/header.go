package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Protocol constants.
const (
	// Magic opens every frame header and handshake record.
	Magic uint16 = 0xDB5C
	// Version is the protocol version this package speaks; peers must agree.
	// Version 2 added the wait query and reply frames; version 3 aligned
	// every frame to FrameAlign bytes; version 4 named the service in the
	// handshake.
	Version uint8 = 4
	// HeaderSize is the size of an encoded frame header in bytes: 24 bytes
	// of fields, then reserved zero bytes up to FrameAlign.
	HeaderSize = FrameAlign
	// FrameAlign is the alignment of every frame, and so of every payload,
	// in the byte stream: a frame is its header, its payload, and PadLen
	// zero bytes. See the package documentation for why.
	FrameAlign = 64
	// MaxAbortText bounds the reason an abort frame carries.
	MaxAbortText = 1024
)

// Kind says what a frame is.
type Kind uint8

// The frame kinds.
const (
	// KindData carries one message: Tag and Length payload bytes.
	KindData Kind = iota + 1
	// KindAbort says the sender's job failed; the payload is the reason,
	// at most MaxAbortText bytes of text.
	KindAbort
	// KindClose says the sender closed its transport in an orderly way; it
	// sends nothing more on this connection. No payload.
	KindClose
	// KindHeartbeat keeps an idle connection alive. No payload.
	KindHeartbeat
	// KindWaitQuery asks the peer what it is waiting for, to explain a
	// timeout. Tag is the query's id; no payload.
	KindWaitQuery
	// KindWaitReply answers a KindWaitQuery: Tag is the query's id, and the
	// payload the sender's waits, up to MaxWaits [Wait] records.
	KindWaitReply
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindAbort:
		return "abort"
	case KindClose:
		return "close"
	case KindHeartbeat:
		return "heartbeat"
	case KindWaitQuery:
		return "wait query"
	case KindWaitReply:
		return "wait reply"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Sentinel errors of the frame decoder; test with errors.Is.
var (
	// ErrBadMagic: the bytes are not a distbench frame (a stray client, or a
	// stream that lost its place).
	ErrBadMagic = errors.New("bad magic")
	// ErrVersion: the peer speaks another protocol version.
	ErrVersion = errors.New("unsupported protocol version")
	// ErrBadHeader: an unknown kind, non-zero reserved bytes, or a payload
	// on a kind that has none.
	ErrBadHeader = errors.New("malformed frame header")
	// ErrTooLarge: a length over the limit.
	ErrTooLarge = errors.New("frame too large")
)

// Header is a decoded frame header.
type Header struct {
	Kind   Kind
	Tag    uint64
	Length uint64 // payload bytes that follow the header
}

// Encode writes h into b. It does not validate h; DecodeHeader on the other
// side does.
func (h Header) Encode(b *[HeaderSize]byte) {
	binary.LittleEndian.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = byte(h.Kind)
	binary.LittleEndian.PutUint32(b[4:], 0)
	binary.LittleEndian.PutUint64(b[8:], h.Tag)
	binary.LittleEndian.PutUint64(b[16:], h.Length)
	clear(b[fieldsSize:])
}

// fieldsSize is how many bytes of a header its fields use.
const fieldsSize = 24

// PadLen is the number of zero bytes that follow a payload of n bytes, to
// the next multiple of FrameAlign.
func PadLen(n uint64) int { return int(-n & (FrameAlign - 1)) }

// FrameSize is the bytes a frame with a payload of n bytes occupies in the
// stream: header, payload and padding.
func FrameSize(n uint64) uint64 { return HeaderSize + n + uint64(PadLen(n)) }

// DecodeHeader parses and validates a frame header. maxData bounds the
// payload of a data frame; an abort frame's is bounded by MaxAbortText, a
// wait reply's is whole WaitSize records up to MaxWaits, and close,
// heartbeat and wait query frames carry none. It allocates nothing unless it
// fails, so the caller may size its payload buffer from Length once it
// returns nil.
func DecodeHeader(b *[HeaderSize]byte, maxData uint64) (Header, error) {
	if m := binary.LittleEndian.Uint16(b[0:]); m != Magic {
		return Header{}, fmt.Errorf("%w %#04x (want %#04x): not a distbench peer, or the stream is out of sync", ErrBadMagic, m, Magic)
	}
	if v := b[2]; v != Version {
		return Header{}, fmt.Errorf("%w %d (this side speaks %d)", ErrVersion, v, Version)
	}
	if r := binary.LittleEndian.Uint32(b[4:]); r != 0 {
		return Header{}, fmt.Errorf("%w: reserved bytes are %#08x, want 0", ErrBadHeader, r)
	}
	for i, c := range b[fieldsSize:] {
		if c != 0 {
			return Header{}, fmt.Errorf("%w: reserved byte %d is %#02x, want 0", ErrBadHeader, fieldsSize+i, c)
		}
	}
	h := Header{
		Kind:   Kind(b[3]),
		Tag:    binary.LittleEndian.Uint64(b[8:]),
		Length: binary.LittleEndian.Uint64(b[16:]),
	}
	switch h.Kind {
	case KindData:
		if h.Length > maxData {
			return Header{}, fmt.Errorf("%w: data frame of %d bytes (tag %d) exceeds the %d-byte limit", ErrTooLarge, h.Length, h.Tag, maxData)
		}
	case KindAbort:
		if h.Length > MaxAbortText {
			return Header{}, fmt.Errorf("%w: abort reason of %d bytes exceeds the %d-byte limit", ErrTooLarge, h.Length, MaxAbortText)
		}
	case KindWaitReply:
		if h.Length%WaitSize != 0 || h.Length > MaxWaits*WaitSize {
			return Header{}, fmt.Errorf("%w: wait reply of %d bytes, not a multiple of %d up to %d", ErrBadHeader, h.Length, WaitSize, MaxWaits*WaitSize)
		}
	case KindClose, KindHeartbeat, KindWaitQuery:
		if h.Length != 0 {
			return Header{}, fmt.Errorf("%w: %v frame with a %d-byte payload", ErrBadHeader, h.Kind, h.Length)
		}
	default:
		return Header{}, fmt.Errorf("%w: unknown frame kind %d", ErrBadHeader, b[3])
	}
	return h, nil
}
