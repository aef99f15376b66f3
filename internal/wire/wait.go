package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// WaitSize is the size of one encoded [Wait]; a wait reply's payload holds
// at most MaxWaits of them.
const (
	WaitSize = 24
	MaxWaits = 8
)

// WaitKind says what a rank is blocked in.
type WaitKind uint8

// The wait kinds.
const (
	// WaitRecv: blocked on a message from Peer under Tag.
	WaitRecv WaitKind = iota + 1
	// WaitSend: blocked until Peer takes a message under Tag.
	WaitSend
)

func (k WaitKind) String() string {
	switch k {
	case WaitRecv:
		return "recv"
	case WaitSend:
		return "send"
	}
	return fmt.Sprintf("wait(%d)", uint8(k))
}

// Wait is one operation a rank is blocked in, as a wait reply carries it.
// A reply holds the rank's waits, at most one per peer and MaxWaits in all,
// the one it is most stuck in first; none at all says that it is blocked in
// nothing (computing, stuck elsewhere, or not yet in the operation).
// Encoded, all integers little-endian:
//
//	offset size field
//	0      1    kind     [WaitKind]
//	1      1    flags    bit 0: timed out; the other bits are zero
//	2      2    reserved, zero
//	4      4    peer
//	8      8    tag
//	16     8    age      nanoseconds
type Wait struct {
	Kind WaitKind
	// TimedOut: the wait reached its deadline, and the rank is failing
	// because of it.
	TimedOut bool
	Peer     int           // the rank it waits for
	Tag      uint64        // the message's tag
	Age      time.Duration // how long it has waited
}

// AppendWaits appends the encoding of ws, a wait reply's payload, to b. It
// does not validate ws; DecodeWaits on the other side does.
func AppendWaits(b []byte, ws []Wait) []byte {
	for _, w := range ws {
		var flags byte
		if w.TimedOut {
			flags = 1
		}
		b = append(b, byte(w.Kind), flags, 0, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(w.Peer))
		b = binary.LittleEndian.AppendUint64(b, w.Tag)
		b = binary.LittleEndian.AppendUint64(b, uint64(w.Age))
	}
	return b
}

// DecodeWaits parses and validates a wait reply's payload. Each peer is
// checked against MaxWorldSize only: the caller checks it against its world.
func DecodeWaits(b []byte) ([]Wait, error) {
	if len(b)%WaitSize != 0 || len(b) > MaxWaits*WaitSize {
		return nil, fmt.Errorf("%w: wait reply of %d bytes, not a multiple of %d up to %d", ErrBadHeader, len(b), WaitSize, MaxWaits*WaitSize)
	}
	var ws []Wait
	for ; len(b) > 0; b = b[WaitSize:] {
		kind, flags := WaitKind(b[0]), b[1]
		peer := binary.LittleEndian.Uint32(b[4:])
		age := binary.LittleEndian.Uint64(b[16:])
		switch {
		case kind != WaitRecv && kind != WaitSend:
			return nil, fmt.Errorf("%w: wait of unknown kind %d", ErrBadHeader, b[0])
		case flags&^1 != 0:
			return nil, fmt.Errorf("%w: wait flags %#02x", ErrBadHeader, flags)
		case binary.LittleEndian.Uint16(b[2:]) != 0:
			return nil, fmt.Errorf("%w: a wait's reserved bytes are not zero", ErrBadHeader)
		case peer >= MaxWorldSize:
			return nil, fmt.Errorf("%w: wait for rank %d (at most %d)", ErrBadHeader, peer, MaxWorldSize-1)
		case age > math.MaxInt64:
			return nil, fmt.Errorf("%w: a wait's age %d overflows", ErrBadHeader, age)
		}
		ws = append(ws, Wait{Kind: kind, TimedOut: flags == 1, Peer: int(peer), Tag: binary.LittleEndian.Uint64(b[8:]), Age: time.Duration(age)})
	}
	return ws, nil
}
