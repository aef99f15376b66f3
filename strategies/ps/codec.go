package ps

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// codecName is the gRPC content subtype of the raw-bytes codec
// ("application/grpc+distbench-ps-raw").
const codecName = "distbench-ps-raw"

func init() { encoding.RegisterCodecV2(rawCodec{}) }

// rawCodec moves frames without protobuf: Marshal hands gRPC the header and
// the caller's payload memory as they are (no copy, no size limit beyond
// gRPC's own message limit), Unmarshal parses the header and keeps references
// to the received buffers instead of copying them out.
type rawCodec struct{}

var _ encoding.CodecV2 = rawCodec{}

func (rawCodec) Name() string { return codecName }

// frame is the one message type of the service: a header and a payload.
//
// Outgoing, the payload is payload (memory gRPC reads after SendMsg has
// returned, until the message is written: callers keep it unchanged until the
// RPC completes), or buf, a reference-counted buffer whose ownership passes
// to gRPC. Incoming, segs are views of the received buffers, held in in until
// release is called.
type frame struct {
	h       header
	payload []byte
	buf     mem.Buffer

	in   mem.BufferSlice
	segs [][]byte
	hdr  [headerSize + maxName]byte

	// lenient: a malformed header is not an error of the call but a
	// message to refuse: Unmarshal sets bad instead of failing, so that a
	// server can tell a malformed message from a worker that went away.
	lenient bool
	bad     error
}

// payloadLen is the number of payload bytes received.
func (f *frame) payloadLen() int { return segLen(f.segs) }

// release drops the references to the received buffers; segs are invalid
// afterwards. The frame may be reused.
func (f *frame) release() {
	f.in.Free()
	clear(f.in)
	f.in = f.in[:0]
	clear(f.segs)
	f.segs = f.segs[:0]
}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("ps: codec cannot marshal %T", v)
	}
	out := make(mem.BufferSlice, 1, 2)
	out[0] = mem.SliceBuffer(f.h.appendTo(make([]byte, 0, f.h.size())))
	switch {
	case f.buf != nil:
		out = append(out, f.buf)
		f.buf = nil // gRPC frees it once written
	case len(f.payload) > 0:
		out = append(out, mem.SliceBuffer(f.payload))
	}
	return out, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("ps: codec cannot unmarshal into %T", v)
	}
	f.release()
	f.bad = nil
	// The header may straddle buffers: gather up to its maximum size.
	n := 0
	for _, b := range data {
		n += copy(f.hdr[n:], b.ReadOnlyData())
		if n == len(f.hdr) {
			break
		}
	}
	h, size, err := decodeHeader(f.hdr[:n])
	if err != nil {
		if f.lenient {
			f.h, f.bad = header{}, err
			return nil
		}
		return err
	}
	f.h = h
	skip := size
	for _, b := range data {
		l := b.Len()
		if skip >= l {
			skip -= l
			continue
		}
		var part mem.Buffer
		if skip > 0 {
			part = b.Slice(skip, l) // takes its own reference
			skip = 0
		} else {
			b.Ref()
			part = b
		}
		f.in = append(f.in, part)
		f.segs = append(f.segs, part.ReadOnlyData())
	}
	return nil
}
