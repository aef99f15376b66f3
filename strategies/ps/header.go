package ps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/distbench/distbench/collective"
)

// Every message of the service, in either direction, is a fixed binary
// header followed by an optional payload of raw tensor bytes:
//
//	off size  field
//	  0    2  magic "PS"
//	  2    1  version
//	  3    1  kind
//	  4    1  dtype (0 when no data)
//	  5    1  op (0 = assign: pieces are copied, not reduced)
//	  6    2  name length (training keys; at most maxName)
//	  8    4  rank: the sending worker's global rank; a server's index in replies
//	 12    4  contrib: contributions per element (pushes); worker count (hello, init)
//	 16    4  chunk: the shard's chunk grid in bytes
//	 20    4  aux: staleness (init), expected server index (hello), the
//	             kind of the call that timed out (why)
//	 24    8  group: the communicator's identity (collectives)
//	 32    8  seq: the collective's sequence number, or the training step (signed)
//	 40    8  shard: bytes of the server's piece of the tensor
//	 48    8  pull: bytes that will be pulled from the piece before it is released
//	 56    8  offset: where in the piece this message's data (or pull range) starts
//	 64    8  length: payload bytes, or the pull range's length
//	 72    4  lr: the learning rate to apply the gradient with (float32 bits; grad)
//	 76    4  momentum (float32 bits; init)
//	 80    …  name, then payload
//
// Little-endian throughout. Decoding checks every field against the limits
// below before anything is allocated or indexed with it.
const (
	headerSize = 80
	magic      = 'P' | 'S'<<8
	// version 2: the learning rate moved from init to every gradient push
	// (a version-1 worker's pushes would carry none, and train at rate 0).
	// The kind why came with the handshake, which no earlier build passes.
	version = 2

	// maxName bounds a training key.
	maxName = 256
	// minChunk is the chunk option's floor.
	minChunk = 64
	// maxChunk bounds the chunk option, and so every data message; gRPC's
	// receive limit is set just above it (see grpcopts.go).
	maxChunk = 16 << 20
	// maxMessage is the largest message either side accepts.
	maxMessage = headerSize + maxName + maxChunk
	// maxShard bounds a server's piece of one tensor (1 TiB).
	maxShard = 1 << 40
	// maxWorkers bounds contributions per element and worker counts.
	maxWorkers = 1 << 16
	// maxAbortText bounds the reason an abort carries.
	maxAbortText = 4 << 10
)

// kind is a message's purpose.
type kind uint8

const (
	kindHello  kind = iota + 1 // worker → server: who I am, who I think you are
	kindBye                    // worker → server: this worker has closed
	kindAbort                  // worker → server: this worker's job failed; payload: why
	kindAck                    // server → worker: reply to a unary call or a push stream
	kindPush                   // worker → server: a piece of a collective round
	kindPull                   // worker → server: a pull request; server → worker: a piece of the result
	kindInit                   // worker → server: initial parameters of a training key
	kindGrad                   // worker → server: a piece of a gradient
	kindParams                 // worker → server: a parameter pull; server → worker: a piece of it
	kindWhy                    // worker → server: what did my timed-out call wait for? (ack payload: the answer)
	kindDone                   // worker → server, over the mesh: the push begun before has ended
	kindSpan                   // worker → server, over the mesh: a push of a range, its payload following cut at the chunk grid
	kindEnd                    // one past the last kind
)

var kindNames = [...]string{
	kindHello: "hello", kindBye: "bye", kindAbort: "abort", kindAck: "ack", kindPush: "push",
	kindPull: "pull", kindInit: "init", kindGrad: "grad", kindParams: "params", kindWhy: "why", kindDone: "done",
	kindSpan: "span",
}

func (k kind) String() string {
	if k == 0 || k >= kindEnd {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// header is a decoded message header; see the layout above.
type header struct {
	kind     kind
	dtype    collective.DType
	op       collective.Op
	rank     uint32
	contrib  uint32
	chunk    uint32
	aux      uint32
	group    uint64
	seq      int64
	shard    uint64
	pull     uint64
	offset   uint64
	length   uint64
	lr       float32
	momentum float32
	name     string
}

// size is the encoded header's length.
func (h *header) size() int { return headerSize + len(h.name) }

// appendTo appends the encoded header to b.
func (h *header) appendTo(b []byte) []byte {
	var f [headerSize]byte
	le := binary.LittleEndian
	le.PutUint16(f[0:], magic)
	f[2] = version
	f[3] = byte(h.kind)
	f[4] = byte(h.dtype)
	f[5] = byte(h.op)
	le.PutUint16(f[6:], uint16(len(h.name)))
	le.PutUint32(f[8:], h.rank)
	le.PutUint32(f[12:], h.contrib)
	le.PutUint32(f[16:], h.chunk)
	le.PutUint32(f[20:], h.aux)
	le.PutUint64(f[24:], h.group)
	le.PutUint64(f[32:], uint64(h.seq))
	le.PutUint64(f[40:], h.shard)
	le.PutUint64(f[48:], h.pull)
	le.PutUint64(f[56:], h.offset)
	le.PutUint64(f[64:], h.length)
	le.PutUint32(f[72:], math.Float32bits(h.lr))
	le.PutUint32(f[76:], math.Float32bits(h.momentum))
	b = append(b, f[:]...)
	return append(b, h.name...)
}

var errShortHeader = errors.New("ps: message shorter than its header")

// decodeHeader parses the header at the start of b (which may hold more: the
// payload) and checks it. It returns the header's encoded size.
func decodeHeader(b []byte) (header, int, error) {
	var h header
	if len(b) < headerSize {
		return h, 0, errShortHeader
	}
	le := binary.LittleEndian
	if m := le.Uint16(b[0:]); m != magic {
		return h, 0, fmt.Errorf("ps: bad magic %#04x (not a parameter-server message)", m)
	}
	if v := b[2]; v != version {
		return h, 0, fmt.Errorf("ps: protocol version %d, this build speaks %d", v, version)
	}
	nameLen := int(le.Uint16(b[6:]))
	if nameLen > maxName {
		return h, 0, fmt.Errorf("ps: key of %d bytes exceeds the limit of %d", nameLen, maxName)
	}
	if len(b) < headerSize+nameLen {
		return h, 0, errShortHeader
	}
	h = header{
		kind:     kind(b[3]),
		dtype:    collective.DType(b[4]),
		op:       collective.Op(b[5]),
		rank:     le.Uint32(b[8:]),
		contrib:  le.Uint32(b[12:]),
		chunk:    le.Uint32(b[16:]),
		aux:      le.Uint32(b[20:]),
		group:    le.Uint64(b[24:]),
		seq:      int64(le.Uint64(b[32:])),
		shard:    le.Uint64(b[40:]),
		pull:     le.Uint64(b[48:]),
		offset:   le.Uint64(b[56:]),
		length:   le.Uint64(b[64:]),
		lr:       math.Float32frombits(le.Uint32(b[72:])),
		momentum: math.Float32frombits(le.Uint32(b[76:])),
		name:     string(b[headerSize : headerSize+nameLen]),
	}
	if err := h.check(); err != nil {
		return header{}, 0, err
	}
	return h, headerSize + nameLen, nil
}

// check validates the fields against the limits and against each other.
func (h *header) check() error {
	if h.kind == 0 || h.kind >= kindEnd {
		return fmt.Errorf("ps: unknown message kind %d", h.kind)
	}
	if h.dtype != 0 && !h.dtype.Valid() {
		return fmt.Errorf("ps: %s: invalid dtype %d", h.kind, h.dtype)
	}
	// Avg never travels: core rewrites it as Sum and a division.
	if h.op != 0 && (!h.op.Valid() || h.op == collective.Avg) {
		return fmt.Errorf("ps: %s: invalid op %d", h.kind, h.op)
	}
	if h.contrib > maxWorkers {
		return fmt.Errorf("ps: %s: %d contributions exceed the limit of %d", h.kind, h.contrib, maxWorkers)
	}
	if h.rank >= maxWorkers {
		return fmt.Errorf("ps: %s: rank %d out of range (limit %d)", h.kind, h.rank, maxWorkers)
	}
	if h.chunk > maxChunk {
		return fmt.Errorf("ps: %s: chunk of %d bytes exceeds the limit of %d", h.kind, h.chunk, maxChunk)
	}
	if h.shard > maxShard || h.offset > maxShard || h.length > maxShard {
		return fmt.Errorf("ps: %s: shard %d, offset %d, length %d: beyond the limit of %d bytes",
			h.kind, h.shard, h.offset, h.length, uint64(maxShard))
	}
	if h.pull > h.shard*maxWorkers {
		return fmt.Errorf("ps: %s: %d bytes to pull from a %d-byte shard", h.kind, h.pull, h.shard)
	}
	if math.IsNaN(float64(h.lr)) || math.IsInf(float64(h.lr), 0) ||
		math.IsNaN(float64(h.momentum)) || math.IsInf(float64(h.momentum), 0) {
		return fmt.Errorf("ps: %s: learning rate %v or momentum %v not finite", h.kind, h.lr, h.momentum)
	}
	switch h.kind {
	case kindAbort, kindAck:
		// An ack's payload is the answer to a why, if any.
		if h.length > maxAbortText {
			return fmt.Errorf("ps: %s text of %d bytes exceeds the limit of %d", h.kind, h.length, maxAbortText)
		}
	case kindWhy:
		switch kind(h.aux) {
		case kindPush, kindPull, kindInit, kindGrad, kindParams:
		default:
			return fmt.Errorf("ps: why about a %s call (accepted: push, pull, init, grad, params)", kind(h.aux))
		}
	case kindPush, kindPull, kindInit, kindGrad, kindParams, kindSpan:
		return h.checkData()
	}
	return nil
}

// checkData validates a message that addresses a range of a shard.
func (h *header) checkData() error {
	if !h.dtype.Valid() {
		return fmt.Errorf("ps: %s: missing dtype", h.kind)
	}
	es := uint64(h.dtype.Size())
	if h.chunk == 0 || uint64(h.chunk)%es != 0 {
		return fmt.Errorf("ps: %s: chunk of %d bytes is not a positive multiple of %s's %d", h.kind, h.chunk, h.dtype, es)
	}
	// The chunk option's floor: a server keeps a few words per chunk of a
	// shard, and posts a receive per chunk of a span, so tiny chunks from
	// a peer would make it hold far more than the shard.
	if h.chunk < minChunk {
		return fmt.Errorf("ps: %s: chunk of %d bytes is below the minimum of %d", h.kind, h.chunk, minChunk)
	}
	if h.shard%es != 0 || h.offset%es != 0 || h.length%es != 0 {
		return fmt.Errorf("ps: %s: shard %d, offset %d or length %d not a multiple of %s's %d bytes",
			h.kind, h.shard, h.offset, h.length, h.dtype, es)
	}
	if h.offset+h.length > h.shard {
		return fmt.Errorf("ps: %s: range [%d, %d) outside the %d-byte shard", h.kind, h.offset, h.offset+h.length, h.shard)
	}
	if (h.kind == kindPush || h.kind == kindInit || h.kind == kindGrad) && h.length > uint64(h.chunk) {
		return fmt.Errorf("ps: %s: piece of %d bytes larger than the %d-byte chunk", h.kind, h.length, h.chunk)
	}
	if (h.kind == kindInit || h.kind == kindGrad || h.kind == kindParams) && h.dtype != collective.Float32 {
		return fmt.Errorf("ps: %s: parameters are float32, not %s", h.kind, h.dtype)
	}
	return nil
}
