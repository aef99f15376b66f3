package rendezvous

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// smallLimits make the fuzzer reach the limits quickly.
var smallLimits = Limits{MaxKeySize: 16, MaxValueSize: 64, MaxWaitKeys: 4}.withDefaults()

func sampleRequests() []request {
	return []request{
		{op: opSet, id: 1, key: "k", value: []byte("v")},
		{op: opSet, id: 2, key: "empty", value: []byte{}},
		{op: opGet, id: 3, key: "addr/0", wait: 1500 * time.Millisecond},
		{op: opAdd, id: 1 << 40, key: "n", delta: -7},
		{op: opWait, id: 5, keys: []string{"a", "bb", "a"}, wait: time.Second},
		{op: opWait, id: 6, keys: []string{}},
		{op: opCancel, id: 3},
	}
}

func sampleResponses() []response {
	return []response{
		{status: statusOK, op: opSet, id: 1, body: []byte{}},
		{status: statusOK, op: opGet, id: 2, body: []byte("value")},
		{status: statusOK, op: opAdd, id: 3, body: binary.BigEndian.AppendUint64(nil, 42)},
		{status: statusOK, op: opWait, id: 4, body: []byte{}},
		{status: statusTimeout, op: opWait, id: 5, body: []byte(`keys "a", "b"`)},
		{status: statusError, op: opAdd, id: 6, body: []byte(`add to key "x": it holds "y", not an integer`)},
	}
}

// normalize makes decoded and original requests comparable.
func normalize(r request) request {
	if r.value == nil && r.op == opSet {
		r.value = []byte{}
	}
	if r.keys == nil && r.op == opWait {
		r.keys = []string{}
	}
	return r
}

func TestRequestRoundTrip(t *testing.T) {
	for _, want := range sampleRequests() {
		t.Run(opName(want.op), func(t *testing.T) {
			frame := appendRequest(nil, &want)
			if got := len(frame) - 4; got != requestSize(&want) {
				t.Fatalf("requestSize = %d, frame payload %d", requestSize(&want), got)
			}
			p, err := readFrame(bytes.NewReader(frame), 1<<20, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRequest(p, Limits{}.withDefaults())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(got), normalize(want)) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	hdr := func(op byte) []byte { return append([]byte{op}, make([]byte, 8)...) }
	key := func(b []byte, k string) []byte { return appendKey(b, k) }
	u32 := func(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
	u16 := func(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
	tests := []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "truncated op"},
		{"no id", []byte{opGet, 0, 0}, "truncated request id"},
		{"unknown op", hdr(99), "unknown op 99"},
		{"op zero", hdr(0), "unknown op 0"},
		{"empty key", key(u32(hdr(opGet), 0), ""), "empty key"},
		{"key over limit", key(u32(hdr(opGet), 0), strings.Repeat("k", 17)), "key of 17 bytes exceeds the 16-byte limit"},
		{"truncated key", append(u16(u32(hdr(opGet), 0), 10), "abc"...), "truncated key"},
		{"value over limit, not allocated", u32(key(hdr(opSet), "k"), 1<<31), "value of 2147483648 bytes exceeds the 64-byte limit"},
		{"truncated value", append(u32(key(hdr(opSet), "k"), 10), "abc"...), "truncated value"},
		{"too many wait keys", u16(u32(hdr(opWait), 0), 5), "wait on 5 keys exceeds the limit of 4"},
		{"wait count beyond payload", append(u16(u32(hdr(opWait), 0), 3), 0, 1, 'a'), "3 keys cannot fit in 3 bytes"},
		{"trailing bytes", append(key(u32(hdr(opGet), 0), "k"), 1, 2), "2 bytes after the end of a get request"},
		{"truncated delta", append(hdr(opAdd), 1, 2, 3), "truncated delta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeRequest(tt.payload, smallLimits)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	resp := func(status, op byte, body string) []byte {
		return append(append([]byte{status, op}, make([]byte, 8)...), body...)
	}
	tests := []struct {
		name    string
		payload []byte
		want    string
	}{
		{"short", []byte{0, 1, 0}, "truncated request id"},
		{"unknown status", resp(9, opSet, ""), "unknown status 9"},
		{"unknown op", resp(statusOK, 77, ""), "unknown op 77"},
		{"set with body", resp(statusOK, opSet, "x"), "1 unexpected bytes in a set answer"},
		{"add short", resp(statusOK, opAdd, "1234"), "add answer of 4 bytes, want 8"},
		{"value over limit", resp(statusOK, opGet, strings.Repeat("v", 65)), "value of 65 bytes exceeds the 64-byte limit"},
		{"message over limit", resp(statusError, opGet, strings.Repeat("m", maxMessage+1)), "exceeds the 2048-byte limit"},
		{"message not utf-8", resp(statusTimeout, opWait, "\xff\xfe"), "not UTF-8"},
		{"error for cancel", resp(statusError, opCancel, "x"), "unknown op 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeResponse(tt.payload, smallLimits)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestReadFrame(t *testing.T) {
	t.Run("over the limit is refused before reading the payload", func(t *testing.T) {
		r := &countingReader{r: bytes.NewReader([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3})}
		_, err := readFrame(r, 100, nil)
		var big *frameTooLargeError
		if !errors.As(err, &big) || big.n != 0x7fffffff || big.limit != 100 {
			t.Fatalf("err = %v, want a frameTooLargeError", err)
		}
		if r.n != 4 {
			t.Fatalf("read %d bytes, want only the 4-byte header", r.n)
		}
	})
	t.Run("empty frame", func(t *testing.T) {
		if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 0}), 100, nil); err == nil || !strings.Contains(err.Error(), "empty frame") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("truncated payload", func(t *testing.T) {
		if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 5, 1}), 100, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v, want ErrUnexpectedEOF", err)
		}
	})
	t.Run("reuses the buffer", func(t *testing.T) {
		buf := make([]byte, 0, 16)
		p, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 2, 7, 8}), 100, buf)
		if err != nil || &p[0] != &buf[:1][0] || !bytes.Equal(p, []byte{7, 8}) {
			t.Fatalf("p = %v, err = %v", p, err)
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", maxMessage)
	got := clip(long)
	if len(got) > maxMessage || !strings.HasSuffix(got, "…") {
		t.Fatalf("clip: %d bytes, suffix %q", len(got), got[len(got)-4:])
	}
	if got := clip("a\xffb"); got != "a\uFFFDb" {
		t.Fatalf("clip(invalid) = %q", got)
	}
}

// FuzzDecodeRequest feeds the server's decoder a stream of frames: it must
// never panic, never accept anything over the limits, and whatever it
// accepts must encode back to an equivalent request.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range sampleRequests() {
		f.Add(appendRequest(nil, &r))
	}
	f.Add([]byte{0, 0, 0, 9, opGet, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 16, opWait, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		for {
			p, err := readFrame(r, smallLimits.maxRequest(), nil)
			if err != nil {
				return
			}
			req, err := decodeRequest(p, smallLimits)
			if err != nil {
				continue
			}
			if len(req.key) > smallLimits.MaxKeySize || len(req.value) > smallLimits.MaxValueSize || len(req.keys) > smallLimits.MaxWaitKeys {
				t.Fatalf("accepted a request over the limits: %+v", req)
			}
			again, err := decodeRequest(appendRequest(nil, &req)[4:], smallLimits)
			if err != nil {
				t.Fatalf("re-encoded request does not decode: %v (%+v)", err, req)
			}
			if !reflect.DeepEqual(normalize(again), normalize(req)) {
				t.Fatalf("round trip changed the request:\n got %+v\nwant %+v", again, req)
			}
		}
	})
}

// FuzzDecodeResponse does the same for the client's decoder.
func FuzzDecodeResponse(f *testing.F) {
	for _, r := range sampleResponses() {
		f.Add(appendResponse(nil, &r))
	}
	f.Add([]byte{0, 0, 0, 10, statusOK, opAdd, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		for {
			p, err := readFrame(r, smallLimits.maxResponse(), nil)
			if err != nil {
				return
			}
			resp, err := decodeResponse(p, smallLimits)
			if err != nil {
				continue
			}
			switch {
			case resp.status == statusOK && resp.op == opAdd && len(resp.body) != 8,
				resp.status == statusOK && resp.op == opGet && len(resp.body) > smallLimits.MaxValueSize,
				resp.status != statusOK && len(resp.body) > maxMessage:
				t.Fatalf("accepted a malformed response: %+v", resp)
			}
			if !bytes.Equal(appendResponse(nil, &resp)[4:], p) {
				t.Fatalf("re-encoding changed the response")
			}
		}
	})
}
