package ps

import (
	"context"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/internal/wire"
)

// FuzzServerMessages feeds a server what one worker could send it: two
// messages of a push stream, then a request (a pull, a parameter pull or a
// why), each arbitrary bytes. Whatever they are, the server must answer
// with an error or a result, never panic, never index outside what it
// allocated, and never allocate past its memory limit. A header that
// decodes is not enough: an empty piece at the end of a shard once made
// a server index past its chunk table and die.
func FuzzServerMessages(f *testing.F) {
	push := header{kind: kindPush, dtype: collective.Float32, op: collective.Sum, rank: 1, contrib: 3,
		chunk: 64, group: 9, seq: 1, shard: 128, pull: 384, length: 64}
	assign := push
	assign.op, assign.offset, assign.length = 0, 60, 4
	pull := push
	pull.kind, pull.length = kindPull, 128
	init := header{kind: kindInit, dtype: collective.Float32, rank: 0, contrib: 3, chunk: 64, shard: 128, length: 64, name: "w"}
	grad := init
	grad.kind, grad.rank, grad.lr = kindGrad, 1, 0.5
	params := init
	params.kind, params.seq, params.length = kindParams, 0, 128
	why := header{kind: kindWhy, rank: 1, group: 9, seq: 1, aux: uint32(kindPull)}
	end := push
	end.offset, end.length = 128, 0
	msg := func(h header) []byte { return h.appendTo(nil) }
	withData := func(h header) []byte { return append(h.appendTo(nil), make([]byte, h.length)...) }
	for _, seed := range [][3][]byte{
		{withData(push), withData(push), msg(pull)},
		{withData(assign), withData(assign), msg(why)},
		{msg(end), withData(push), msg(pull)},
		{withData(init), withData(grad), msg(params)},
		{withData(init), withData(init), msg(why)},
		{{}, make([]byte, headerSize), []byte("PS")},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, a, b, req []byte) {
		s := newServer(0, 3, wire.HandshakeConfig{}, DefaultPeerTimeout, nil)
		s.memLimit = 1 << 20 // what a fuzzed shard may make it allocate
		var st pushState
		for _, m := range [][]byte{a, b} {
			h, n, err := decodeHeader(m)
			if err != nil {
				continue
			}
			if err := s.accept(&st, &h, [][]byte{m[n:]}); err != nil {
				break
			}
		}
		if s.held.Load() > s.memLimit {
			t.Fatalf("holds %d bytes, past its limit of %d", s.held.Load(), s.memLimit)
		}
		h, n, err := decodeHeader(req)
		if err != nil || n != len(req) {
			return
		}
		// A request never waits here: what is not ready fails at once.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		switch h.kind {
		case kindPull:
			if r, err := s.round(&h); err == nil {
				r.read(ctx, int(h.offset), int(h.length), func(lo, hi int) error {
					if lo < 0 || hi > len(r.acc) || lo > hi {
						t.Fatalf("emits [%d, %d) of a %d-byte accumulator", lo, hi, len(r.acc))
					}
					return nil
				})
			}
		case kindParams:
			if p, err := s.paramsFor(&h); err == nil {
				s.pullParams(ctx, p, &h, func(lo int, b *[]byte) error {
					if lo < 0 || lo+len(*b) > p.shard {
						t.Fatalf("emits [%d, %d) of a %d-byte shard", lo, lo+len(*b), p.shard)
					}
					return nil
				})
			}
		case kindWhy:
			if text := s.whyText(&h); text == "" {
				t.Fatal("why answered nothing")
			}
		}
	})
}

// FuzzMeshServer feeds a server over the in-memory mesh what one worker
// could send it as requests: a few messages of arbitrary bytes, then its
// goodbye. Whatever they are, the server must fail cleanly or go on, never
// panic, never allocate past its memory limit, and stop when told.
func FuzzMeshServer(f *testing.F) {
	span := header{kind: kindSpan, dtype: collective.Float32, op: collective.Sum, rank: 0, contrib: 1,
		chunk: 64, group: 9, seq: 1, shard: 128, pull: 128, length: 128}
	pull := span
	pull.kind = kindPull
	done := span
	done.kind, done.length = kindDone, 0
	grad := header{kind: kindGrad, dtype: collective.Float32, contrib: 1, chunk: 64, shard: 128, length: 64, name: "w", lr: 0.5}
	why := header{kind: kindWhy, group: 9, seq: 1, aux: uint32(kindPull)}
	fixed := func(h header) []byte { return h.appendTo(nil)[:headerSize] }
	for _, seed := range [][4][]byte{
		{fixed(pull), fixed(span), make([]byte, 64), make([]byte, 64)},
		{fixed(span), make([]byte, 64), fixed(done), fixed(why)},
		{fixed(grad), []byte("w"), make([]byte, 64), fixed(done)},
		{{}, make([]byte, headerSize), []byte("PS"), nil},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, a, b, c, d []byte) {
		trs := transport.NewMemWorld(2, transport.MemOptions{})
		s := newServer(0, 1, wire.HandshakeConfig{}, DefaultPeerTimeout, nil)
		s.memLimit = 1 << 20
		s.mesh = newMeshServer(s, trs[1], time.Second)
		s.mesh.start(1, -1)
		// What the worker would post for answers, so sends do not wait.
		for _, tag := range []uint64{meshResponses, meshWhy, meshAcks} {
			for range 4 {
				trs[0].PostRecv(1, tag, make([]byte, answerHeader))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, m := range [][]byte{a, b, c, d, fixed(header{kind: kindBye})} {
			if trs[0].Send(ctx, 1, meshRequests, m) != nil {
				break
			}
		}
		s.stop()
		if s.held.Load() > s.memLimit {
			t.Fatalf("holds %d bytes, past its limit of %d", s.held.Load(), s.memLimit)
		}
	})
}
