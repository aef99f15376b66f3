package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// The fuzz targets run their seed corpus as ordinary tests; explore with
//
//	go test -run '^$' -fuzz FuzzDecodeHeader -fuzztime 30s ./internal/wire/

const fuzzLimit = 1 << 20

func FuzzDecodeHeader(f *testing.F) {
	for _, h := range []Header{
		{Kind: KindData, Tag: 1, Length: 0},
		{Kind: KindData, Tag: 1 << 63, Length: fuzzLimit},
		{Kind: KindData, Length: fuzzLimit + 1},
		{Kind: KindAbort, Length: 12},
		{Kind: KindAbort, Length: MaxAbortText + 1},
		{Kind: KindClose},
		{Kind: KindHeartbeat, Length: 1},
		{Kind: KindWaitQuery, Tag: 5},
		{Kind: KindWaitQuery, Length: WaitSize},
		{Kind: KindWaitReply, Tag: 5},
		{Kind: KindWaitReply, Tag: 5, Length: 2 * WaitSize},
		{Kind: KindWaitReply, Length: WaitSize + 1},
		{Kind: KindWaitReply, Length: (MaxWaits + 1) * WaitSize},
		{Kind: 0},
		{Kind: 99},
	} {
		b := encoded(h)
		f.Add(b[:])
	}
	f.Add([]byte("GET / HTTP/1.1\r\nHost: example\r\n"))
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b [HeaderSize]byte
		copy(b[:], data)
		h, err := DecodeHeader(&b, fuzzLimit)
		if err != nil {
			if h != (Header{}) {
				t.Fatalf("failed decode returned %+v", h)
			}
			return
		}
		// What decodes is within the limits a caller allocates by...
		switch h.Kind {
		case KindData:
			if h.Length > fuzzLimit {
				t.Fatalf("data length %d over the limit", h.Length)
			}
		case KindAbort:
			if h.Length > MaxAbortText {
				t.Fatalf("abort length %d over the limit", h.Length)
			}
		case KindWaitReply:
			if h.Length%WaitSize != 0 || h.Length > MaxWaits*WaitSize {
				t.Fatalf("wait reply of length %d", h.Length)
			}
		case KindClose, KindHeartbeat, KindWaitQuery:
			if h.Length != 0 {
				t.Fatalf("%v with length %d", h.Kind, h.Length)
			}
		default:
			t.Fatalf("accepted kind %v", h.Kind)
		}
		// ...and encodes back to the same bytes: nothing is ignored.
		if got := encoded(h); got != b {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, got)
		}
	})
}

// A wait reply's payload comes from the network too: whatever decodes is
// within range and encodes back to the same bytes.
func FuzzDecodeWaits(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendWaits(nil, []Wait{{Kind: WaitRecv, Peer: 3, Tag: 7, Age: time.Second}}))
	f.Add(AppendWaits(nil, []Wait{{Kind: WaitSend, TimedOut: true, Peer: MaxWorldSize - 1, Tag: 1 << 63, Age: 1}, {Kind: WaitRecv}}))
	f.Add(bytes.Repeat([]byte{0xff}, WaitSize))
	f.Add(make([]byte, WaitSize*(MaxWaits+1)))
	f.Add([]byte{byte(WaitRecv), 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := DecodeWaits(data)
		if err != nil {
			if ws != nil {
				t.Fatalf("failed decode returned %+v", ws)
			}
			return
		}
		if len(ws) > MaxWaits {
			t.Fatalf("accepted %d waits", len(ws))
		}
		for _, w := range ws {
			if (w.Kind != WaitRecv && w.Kind != WaitSend) || w.Peer < 0 || w.Peer >= MaxWorldSize || w.Age < 0 {
				t.Fatalf("accepted %+v", w)
			}
		}
		if got := AppendWaits(nil, ws); !bytes.Equal(got, data) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", data, got)
		}
	})
}

// countingReader counts what was read from it, to prove that a hostile
// record length makes the decoder read (and so buffer) no more than the limit.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

func helloRecord(h hello) []byte {
	var r record
	encodeHello(&r, &h)
	return append([]byte(nil), r.bytes()...)
}

func FuzzReadRecord(f *testing.F) {
	f.Add(helloRecord(hello{rank: 1, size: 4, jobID: "job-1"}))
	f.Add(helloRecord(hello{rank: 0, size: 1}))
	f.Add(helloRecord(hello{rank: 5, size: 4, jobID: "x"}))
	f.Add(helloRecord(hello{rank: 1, size: 2, service: ServiceStore, jobID: "job-1"}))
	f.Add(helloRecord(hello{rank: 3, size: 6, service: ServicePS}))
	var r record
	mac := [MACSize]byte{1, 2, 3}
	encodeAuth(&r, &mac)
	f.Add(append([]byte(nil), r.bytes()...))
	encodeReject(&r, ErrAuth)
	f.Add(append([]byte(nil), r.bytes()...))
	r.start(recAccept)
	r.finish()
	f.Add(append([]byte(nil), r.bytes()...))
	f.Add([]byte{0x5c, 0xdb, Version, recHello, 0xff, 0xff})
	f.Add([]byte{0x5c, 0xdb, Version, recReject, 1, 0, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		cr := &countingReader{r: bytes.NewReader(data)}
		var buf [maxRecordBody]byte
		typ, body, err := readRecord(cr, &buf)
		if cr.n > recordHeaderSize+maxRecordBody {
			t.Fatalf("read %d bytes for one record", cr.n)
		}
		if err != nil {
			return
		}
		switch typ {
		case recHello:
			h, err := decodeHello(body)
			if err != nil {
				return
			}
			if len(h.jobID) > MaxJobID || h.size < 1 || h.size > MaxWorldSize || h.rank >= h.size {
				t.Fatalf("accepted %+v", h)
			}
			if got := helloRecord(h); !bytes.Equal(got, data[:len(got)]) {
				t.Fatalf("re-encoding differs:\n in %x\nout %x", data[:len(got)], got)
			}
		case recAuth:
			decodeAuth(body)
		case recReject:
			if err := decodeReject(body); err == nil || len(err.Error()) > MaxReason {
				t.Fatalf("reject decoded to %v", err)
			}
		case recAccept:
		default:
			t.Fatalf("accepted record type %d", typ)
		}
	})
}

// fuzzConn is a net.Conn whose peer's bytes are fixed: it drives a whole
// handshake state machine from fuzz input.
type fuzzConn struct {
	in *bytes.Reader
}

func (c *fuzzConn) Read(b []byte) (int, error)         { return c.in.Read(b) }
func (c *fuzzConn) Write(b []byte) (int, error)        { return len(b), nil }
func (c *fuzzConn) Close() error                       { return nil }
func (c *fuzzConn) LocalAddr() net.Addr                { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *fuzzConn) RemoteAddr() net.Addr               { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *fuzzConn) SetDeadline(t time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(t time.Time) error { return nil }

func FuzzHandshake(f *testing.F) {
	f.Add(helloRecord(hello{rank: 1, size: 4, jobID: "job-1"}), true, uint8(ServiceMesh))
	f.Add(helloRecord(hello{rank: 0, size: 4, jobID: "job-1"}), false, uint8(ServiceMesh))
	f.Add(append(helloRecord(hello{rank: 0, size: 4, jobID: "job-1"}), 0x5c, 0xdb, Version, recAuth, MACSize, 0), false, uint8(ServiceMesh))
	f.Add([]byte("\x5c\xdb\x01\x04\x05\x00\x04nope!"), true, uint8(ServiceMesh))
	f.Add(helloRecord(hello{rank: 1, size: 4, service: ServiceStore, jobID: "job-1"}), true, uint8(ServiceStore))
	f.Add(helloRecord(hello{rank: 0, size: 4, service: ServiceMesh, jobID: "job-1"}), false, uint8(ServicePS))
	f.Fuzz(func(t *testing.T, data []byte, server bool, svc uint8) {
		conn := &fuzzConn{in: bytes.NewReader(data)}
		sc, cc := cfg(0), cfg(1)
		sc.Service, cc.Service = Service(svc%(uint8(maxService)+1)), Service(svc%(uint8(maxService)+1))
		var err error
		if server {
			_, err = ServerHandshake(context.Background(), conn, sc, nil)
		} else {
			err = ClientHandshake(context.Background(), conn, cc, 0)
		}
		// No input can pass without the token: the peer's MAC is over our
		// fresh nonce.
		if err == nil {
			t.Fatal("handshake succeeded on fuzz input")
		}
		var he *HandshakeError
		if !errors.As(err, &he) {
			t.Fatalf("%T is not a *HandshakeError: %v", err, err)
		}
	})
}

func TestReadRecordHostileLength(t *testing.T) {
	in := append([]byte{0x5c, 0xdb, Version, recHello}, binary.LittleEndian.AppendUint16(nil, 60000)...)
	in = append(in, make([]byte, 60000)...)
	cr := &countingReader{r: bytes.NewReader(in)}
	var buf [maxRecordBody]byte
	refuse := func() {
		cr.r = bytes.NewReader(in)
		cr.n = 0
		if _, _, err := readRecord(cr, &buf); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("got %v, want ErrTooLarge", err)
		}
	}
	refuse()
	if cr.n != recordHeaderSize {
		t.Errorf("read %d bytes, want only the %d-byte record header", cr.n, recordHeaderSize)
	}
	// What it allocates is the error message, not anything sized by the
	// hostile length.
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		refuse()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 2048 {
		t.Errorf("refusing a 60000-byte record allocates %d bytes", per)
	}
}
