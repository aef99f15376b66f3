package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func encoded(h Header) [HeaderSize]byte {
	var b [HeaderSize]byte
	h.Encode(&b)
	return b
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Kind: KindData, Tag: 0, Length: 0},
		{Kind: KindData, Tag: 7, Length: 1},
		{Kind: KindData, Tag: math.MaxUint64, Length: 1 << 30},
		{Kind: KindAbort, Length: MaxAbortText},
		{Kind: KindClose},
		{Kind: KindHeartbeat},
		{Kind: KindWaitQuery, Tag: 42},
		{Kind: KindWaitReply, Tag: 42},
		{Kind: KindWaitReply, Tag: 42, Length: MaxWaits * WaitSize},
	} {
		b := encoded(h)
		got, err := DecodeHeader(&b, 1<<30)
		if err != nil {
			t.Fatalf("DecodeHeader(%+v): %v", h, err)
		}
		if got != h {
			t.Errorf("round trip: got %+v, want %+v", got, h)
		}
	}
}

// The layout is part of the protocol: pin it.
func TestHeaderLayout(t *testing.T) {
	b := encoded(Header{Kind: KindData, Tag: 0x0102030405060708, Length: 0x1122})
	// magic, version, kind, reserved, tag, length
	want := "5cdb" + "04" + "01" + "00000000" + "0807060504030201" + "2211000000000000" + strings.Repeat("00", 40)
	if got := fmt.Sprintf("%x", b[:]); got != want {
		t.Errorf("encoding\n got %s\nwant %s", got, want)
	}
}

func TestDecodeHeaderErrors(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name   string
		mutate func(b *[HeaderSize]byte)
		want   error
		text   string
	}{
		{"bad magic", func(b *[HeaderSize]byte) { copy(b[:], "GET / HTTP/1.1\r\n") }, ErrBadMagic, "not a distbench peer"},
		{"version", func(b *[HeaderSize]byte) { b[2] = 9 }, ErrVersion, "version 9"},
		{"unknown kind", func(b *[HeaderSize]byte) { b[3] = 0 }, ErrBadHeader, "unknown frame kind 0"},
		{"kind 200", func(b *[HeaderSize]byte) { b[3] = 200 }, ErrBadHeader, "kind 200"},
		{"reserved", func(b *[HeaderSize]byte) { b[5] = 1 }, ErrBadHeader, "reserved"},
		{"reserved tail", func(b *[HeaderSize]byte) { b[63] = 1 }, ErrBadHeader, "reserved byte 63"},
		{"data over limit", func(b *[HeaderSize]byte) { binary.LittleEndian.PutUint64(b[16:], limit+1) }, ErrTooLarge, "1001 bytes"},
		{"data huge", func(b *[HeaderSize]byte) { binary.LittleEndian.PutUint64(b[16:], math.MaxUint64) }, ErrTooLarge, "limit"},
		{"abort over limit", func(b *[HeaderSize]byte) {
			b[3] = byte(KindAbort)
			binary.LittleEndian.PutUint64(b[16:], MaxAbortText+1)
		}, ErrTooLarge, "abort"},
		{"close with payload", func(b *[HeaderSize]byte) {
			b[3] = byte(KindClose)
			binary.LittleEndian.PutUint64(b[16:], 1)
		}, ErrBadHeader, "close frame"},
		{"heartbeat with payload", func(b *[HeaderSize]byte) {
			b[3] = byte(KindHeartbeat)
			binary.LittleEndian.PutUint64(b[16:], 8)
		}, ErrBadHeader, "heartbeat"},
		{"wait query with payload", func(b *[HeaderSize]byte) {
			b[3] = byte(KindWaitQuery)
			binary.LittleEndian.PutUint64(b[16:], 1)
		}, ErrBadHeader, "wait query frame"},
		{"partial wait", func(b *[HeaderSize]byte) {
			b[3] = byte(KindWaitReply)
			binary.LittleEndian.PutUint64(b[16:], WaitSize+1)
		}, ErrBadHeader, "wait reply of 25 bytes"},
		{"too many waits", func(b *[HeaderSize]byte) {
			b[3] = byte(KindWaitReply)
			binary.LittleEndian.PutUint64(b[16:], (MaxWaits+1)*WaitSize)
		}, ErrBadHeader, "up to 192"},
		{"huge wait reply", func(b *[HeaderSize]byte) {
			b[3] = byte(KindWaitReply)
			binary.LittleEndian.PutUint64(b[16:], math.MaxUint64)
		}, ErrBadHeader, "wait reply"},
		{"kind after the last", func(b *[HeaderSize]byte) { b[3] = byte(KindWaitReply) + 1 }, ErrBadHeader, "unknown frame kind 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encoded(Header{Kind: KindData, Tag: 3, Length: 10})
			tt.mutate(&b)
			_, err := DecodeHeader(&b, limit)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q does not mention %q", err, tt.text)
			}
		})
	}
}

func TestPadding(t *testing.T) {
	for _, tt := range []struct {
		n         uint64
		pad       int
		frameSize uint64
	}{
		{0, 0, 64}, {1, 63, 128}, {24, 40, 128}, {63, 1, 128}, {64, 0, 128}, {65, 63, 192},
		{4096, 0, 4160}, {256<<10 + 4, 60, 256<<10 + 128},
	} {
		if got := PadLen(tt.n); got != tt.pad {
			t.Errorf("PadLen(%d) = %d, want %d", tt.n, got, tt.pad)
		}
		if got := FrameSize(tt.n); got != tt.frameSize || got%FrameAlign != 0 {
			t.Errorf("FrameSize(%d) = %d, want %d (a multiple of %d)", tt.n, got, tt.frameSize, FrameAlign)
		}
	}
}

func TestHeaderNoAllocs(t *testing.T) {
	var b [HeaderSize]byte
	allocs := testing.AllocsPerRun(100, func() {
		Header{Kind: KindData, Tag: 1, Length: 64}.Encode(&b)
		if _, err := DecodeHeader(&b, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("encode+decode allocates %v times, want 0", allocs)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindData: "data", KindAbort: "abort", KindClose: "close", KindHeartbeat: "heartbeat",
		KindWaitQuery: "wait query", KindWaitReply: "wait reply", 9: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func BenchmarkHeaderEncodeDecode(b *testing.B) {
	var buf [HeaderSize]byte
	for i := range b.N {
		Header{Kind: KindData, Tag: uint64(i), Length: 4096}.Encode(&buf)
		if _, err := DecodeHeader(&buf, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}
