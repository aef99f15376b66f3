package rendezvous

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The wire of torch.distributed's c10d TCPStore, the store torchrun's agent
// hosts. Torch defines it in C++ only (no spec); what follows is read from
// torch/csrc/distributed/c10d: TCPStore.cpp (the client's SendBuffer and
// TCPStore::set, get, add, check, doWait, compareSet) and
// TCPStoreBackend.hpp/.cpp (the QueryType enum, validationMagicNumber and
// the master daemon's handlers), in 1.13 and 2.x.
//
// A request is one byte of query type, then its arguments, each a
// little-endian (host order: torch sends raw memory, and every platform it
// runs on is little-endian) uint64 length and that many bytes for a string
// or byte vector, or the raw 8 bytes of an int64 / uint64 count. Answers
// are unframed: a byte vector is a uint64 length and its bytes, an int64 is
// 8 bytes, a check or wait answer is one byte. There are no request ids:
// one request is in flight per connection.
//
// The query types differ between versions: torch 2.0 put VALIDATE in front
// of the enum, so every later type moved up by one.

// torchDialect is one version family of the protocol.
type torchDialect int

const (
	torch1 torchDialect = 1 // torch 1.x: SET is 0, no handshake
	torch2 torchDialect = 2 // torch 2.x: VALIDATE is 0, sent first on each connection
)

func (d torchDialect) String() string { return fmt.Sprintf("torch %d.x", int(d)) }

// torchQuery is a query type in torch 2.x numbering; torch1 subtracts one.
type torchQuery byte

const (
	tqValidate   torchQuery = 0
	tqSet        torchQuery = 1
	tqCompareSet torchQuery = 2
	tqGet        torchQuery = 3
	tqAdd        torchQuery = 4
	tqCheck      torchQuery = 5
	tqWait       torchQuery = 6
	tqGetNumKeys torchQuery = 7
	tqPing       torchQuery = 13 // torch 2.4 and later only
)

// torchValidationMagic is TCPStoreBackend.hpp's validationMagicNumber,
// which a torch 2.x client sends after VALIDATE when it connects; the
// server drops a connection whose first request is anything else.
const torchValidationMagic uint32 = 0x3C85F7CE

// The one-byte answers of CHECK and WAIT (CheckResponseType,
// WaitResponseType).
const (
	torchReady        = 0
	torchNotReady     = 1
	torchStopWaiting  = 0
	torchWaitCanceled = 1
)

// torchReq builds one request.
type torchReq struct{ b []byte }

func newTorchReq(d torchDialect, q torchQuery) *torchReq {
	if d == torch1 {
		q-- // no VALIDATE in front
	}
	return &torchReq{b: []byte{byte(q)}}
}

func (r *torchReq) u64(v uint64) *torchReq {
	r.b = binary.LittleEndian.AppendUint64(r.b, v)
	return r
}

func (r *torchReq) bytes(v []byte) *torchReq {
	r.u64(uint64(len(v)))
	r.b = append(r.b, v...)
	return r
}

func (r *torchReq) str(s string) *torchReq { return r.bytes([]byte(s)) }

// torchValidate is the request a torch 2.x client sends first.
func torchValidate() []byte {
	return binary.LittleEndian.AppendUint32([]byte{byte(tqValidate)}, torchValidationMagic)
}

// torchKeys encodes CHECK's and WAIT's arguments: a count, then the keys.
func (r *torchReq) keys(keys []string) *torchReq {
	r.u64(uint64(len(keys)))
	for _, k := range keys {
		r.str(k)
	}
	return r
}

// errTorchProtocol marks an answer that is not what the request expects.
var errTorchProtocol = errors.New("not a torch TCPStore answer")

// readTorchBytes reads a byte-vector answer (GET, COMPARE_SET), refusing a
// length over max before allocating it.
func readTorchBytes(r *bufio.Reader, max int) ([]byte, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(hdr[:])
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: a value of %d bytes, over the limit of %d", errTorchProtocol, n, max)
	}
	v := make([]byte, n)
	if _, err := io.ReadFull(r, v); err != nil {
		return nil, unexpectedEOF(err)
	}
	return v, nil
}

// readTorchInt64 reads ADD's and GETNUMKEYS's answer.
func readTorchInt64(r *bufio.Reader) (int64, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(b[:])), nil
}

// readTorchByte reads CHECK's or WAIT's answer, which must be one of want.
func readTorchByte(r *bufio.Reader, what string, want ...byte) (byte, error) {
	b, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	for _, w := range want {
		if b == w {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%w: %s answered %d", errTorchProtocol, what, b)
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
