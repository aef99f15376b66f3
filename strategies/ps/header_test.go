package ps

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
	"google.golang.org/grpc/mem"
)

func sampleHeaders() []header {
	return []header{
		{kind: kindHello, rank: 3, contrib: 8, aux: 1},
		{kind: kindBye, rank: 7},
		{kind: kindAbort, rank: 2, length: 40},
		{kind: kindAck, rank: 1, contrib: 4},
		{kind: kindPush, dtype: collective.Float32, op: collective.Sum, rank: 1, contrib: 4, chunk: 1 << 20,
			group: 0xdeadbeefcafe, seq: 42, shard: 8 << 20, pull: 32 << 20, offset: 1 << 20, length: 1 << 20},
		{kind: kindPull, dtype: collective.BFloat16, rank: 0, contrib: 1, chunk: 4096, group: 1, seq: 7, shard: 1000, pull: 3000, offset: 10, length: 990},
		{kind: kindInit, dtype: collective.Float32, contrib: 2, chunk: 64, aux: 3, shard: 64, length: 64, lr: 0.1, momentum: 0.9, name: "layer1.weight"},
		{kind: kindGrad, dtype: collective.Float32, rank: 1, contrib: 2, chunk: 64, seq: 5, shard: 128, offset: 64, length: 64, name: "w"},
		{kind: kindParams, dtype: collective.Float32, chunk: 64, seq: -1, shard: 128, length: 128, name: "w"},
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range sampleHeaders() {
		b := h.appendTo(nil)
		if len(b) != h.size() {
			t.Fatalf("%s: encoded %d bytes, size says %d", h.kind, len(b), h.size())
		}
		got, n, err := decodeHeader(append(b, 1, 2, 3)) // a payload follows
		if err != nil {
			t.Fatalf("%s: %v", h.kind, err)
		}
		if n != len(b) || got != h {
			t.Fatalf("%s: decoded %+v (%d bytes), want %+v (%d bytes)", h.kind, got, n, h, len(b))
		}
	}
}

func TestHeaderRejects(t *testing.T) {
	good := header{kind: kindPush, dtype: collective.Float32, op: collective.Sum, contrib: 2, chunk: 64, shard: 128, pull: 256, length: 64}
	for name, mutate := range map[string]func(*header){
		"kind 0":              func(h *header) { h.kind = 0 },
		"unknown kind":        func(h *header) { h.kind = kindEnd },
		"bad dtype":           func(h *header) { h.dtype = 99 },
		"no dtype":            func(h *header) { h.dtype = 0 },
		"avg":                 func(h *header) { h.op = collective.Avg },
		"bad op":              func(h *header) { h.op = 77 },
		"chunk 0":             func(h *header) { h.chunk = 0 },
		"ragged chunk":        func(h *header) { h.chunk = 63 },
		"tiny chunk":          func(h *header) { h.chunk, h.length = 8, 8 },
		"huge chunk":          func(h *header) { h.chunk = maxChunk + 4 },
		"piece beyond shard":  func(h *header) { h.offset = 100 },
		"piece over chunk":    func(h *header) { h.length, h.shard = 128, 128 },
		"ragged length":       func(h *header) { h.length = 6 },
		"huge shard":          func(h *header) { h.shard = maxShard + 4 },
		"too many pulls":      func(h *header) { h.pull = h.shard*maxWorkers + 1 },
		"too many workers":    func(h *header) { h.contrib = maxWorkers + 1 },
		"rank out of range":   func(h *header) { h.rank = maxWorkers },
		"NaN lr":              func(h *header) { h.lr = float32(nan()) },
		"long abort":          func(h *header) { *h = header{kind: kindAbort, length: maxAbortText + 1} },
		"int64 gradient":      func(h *header) { h.kind, h.dtype = kindGrad, collective.Int64 },
		"key over the limit":  func(h *header) { h.name = string(make([]byte, maxName+1)) },
		"float16 init pieces": func(h *header) { h.kind, h.dtype, h.op = kindInit, collective.Float16, 0 },
	} {
		h := good
		mutate(&h)
		b := h.appendTo(nil)
		if len(h.name) > maxName {
			// appendTo writes the length's low 16 bits; the decoder must
			// refuse it before reading the key.
			b[6], b[7] = byte(len(h.name)), byte(len(h.name)>>8)
		}
		if _, _, err := decodeHeader(b); err == nil {
			t.Errorf("%s: accepted %+v", name, h)
		}
	}
	b := good.appendTo(nil)
	for _, cut := range []int{0, 1, headerSize - 1} {
		if _, _, err := decodeHeader(b[:cut]); err == nil {
			t.Errorf("%d bytes accepted", cut)
		}
	}
	bad := bytes.Clone(b)
	bad[0] = 'X'
	if _, _, err := decodeHeader(bad); err == nil {
		t.Error("bad magic accepted")
	}
	bad = bytes.Clone(b)
	bad[2] = version + 1
	if _, _, err := decodeHeader(bad); err == nil {
		t.Error("other version accepted")
	}
	withName := header{kind: kindBye, name: "abc"}
	b = withName.appendTo(nil)
	if _, _, err := decodeHeader(b[:len(b)-1]); err == nil {
		t.Error("truncated key accepted")
	}
}

func nan() float64 { var z float64; return z / z }

// FuzzDecodeHeader feeds the decoder arbitrary bytes: it must never panic,
// and whatever it accepts must pass its own checks and encode back to the
// same bytes.
func FuzzDecodeHeader(f *testing.F) {
	for _, h := range sampleHeaders() {
		f.Add(h.appendTo(nil))
	}
	f.Add([]byte{})
	f.Add(make([]byte, headerSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := decodeHeader(b)
		if err != nil {
			return
		}
		if n != h.size() || n > len(b) {
			t.Fatalf("decoded size %d, header size %d, input %d", n, h.size(), len(b))
		}
		if err := h.check(); err != nil {
			t.Fatalf("accepted a header that fails its checks: %v", err)
		}
		if enc := h.appendTo(nil); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", enc, b[:n])
		}
	})
}

// split cuts b into gRPC-like buffers at the given points.
func split(b []byte, at []int) mem.BufferSlice {
	var out mem.BufferSlice
	prev := 0
	for _, p := range at {
		out = append(out, mem.SliceBuffer(b[prev:p]))
		prev = p
	}
	return append(out, mem.SliceBuffer(b[prev:]))
}

func TestCodecRoundTrip(t *testing.T) {
	payload := make([]byte, 5000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	in := frame{h: header{kind: kindGrad, dtype: collective.Float32, rank: 1, contrib: 2, chunk: 8192, seq: 3, shard: 8192, length: 5000, name: "w"}, payload: payload}
	c := rawCodec{}
	enc, err := c.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	wire := enc.Materialize()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		// Buffer boundaries anywhere, the header's included.
		var at []int
		for p := rng.IntN(30) + 1; p < len(wire); p += rng.IntN(700) + 1 {
			at = append(at, p)
		}
		if trial == 0 {
			at = []int{1, 2, headerSize, headerSize + 1}
		}
		var out frame
		if err := c.Unmarshal(split(wire, at), &out); err != nil {
			t.Fatal(err)
		}
		if out.h != in.h {
			t.Fatalf("header %+v, want %+v", out.h, in.h)
		}
		got := make([]byte, out.payloadLen())
		copySegs(got, out.segs)
		if !bytes.Equal(got, payload) {
			t.Fatalf("trial %d: payload differs", trial)
		}
		out.release()
	}
	var out frame
	if err := c.Unmarshal(split(wire[:headerSize-1], nil), &out); err == nil {
		t.Error("short message accepted")
	}
	if _, err := c.Marshal("text"); err == nil {
		t.Error("marshalled a string")
	}
}

func TestReduceSegs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range collective.DTypes() {
		for _, op := range []collective.Op{collective.Sum, collective.Prod, collective.Max, collective.Min} {
			count := 257
			a, b := collective.NewTensor(dt, count), collective.NewTensor(dt, count)
			for i := range count {
				a.SetFloat64(i, float64(rng.IntN(5)))
				b.SetFloat64(i, float64(rng.IntN(5)))
			}
			want := a.Clone()
			kernels.Reduce(dt, op, want.Data, b.Data)
			var at []int
			for p := rng.IntN(5) + 1; p < len(b.Data); p += rng.IntN(13) + 1 {
				at = append(at, p)
			}
			var segs [][]byte
			for _, buf := range split(b.Data, at) {
				segs = append(segs, buf.ReadOnlyData())
			}
			got := a.Clone()
			reduceSegs(dt, op, got.Data, segs)
			if !bytes.Equal(got.Data, want.Data) {
				t.Errorf("%s %s: segmented reduction differs from kernels.Reduce", dt, op)
			}
		}
	}
}
