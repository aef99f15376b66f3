package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWaitsRoundTrip(t *testing.T) {
	for _, ws := range [][]Wait{
		nil,
		{{Kind: WaitRecv, Peer: 3, Tag: 1<<40 | 7<<8, Age: 250 * time.Millisecond}},
		{
			{Kind: WaitRecv, TimedOut: true, Peer: 0, Tag: math.MaxUint64, Age: math.MaxInt64},
			{Kind: WaitSend, Peer: MaxWorldSize - 1, Tag: 1},
		},
		make([]Wait, MaxWaits),
	} {
		for i := range ws {
			if ws[i].Kind == 0 {
				ws[i] = Wait{Kind: WaitSend, Peer: i, Tag: uint64(i), Age: time.Duration(i)}
			}
		}
		b := AppendWaits(nil, ws)
		if len(b) != len(ws)*WaitSize {
			t.Fatalf("%d waits encode to %d bytes", len(ws), len(b))
		}
		h := Header{Kind: KindWaitReply, Tag: 1, Length: uint64(len(b))}
		hb := encoded(h)
		if _, err := DecodeHeader(&hb, 0); err != nil {
			t.Fatalf("header of a reply of %d waits: %v", len(ws), err)
		}
		got, err := DecodeWaits(b)
		if err != nil {
			t.Fatalf("DecodeWaits(%+v): %v", ws, err)
		}
		if !reflect.DeepEqual(got, ws) {
			t.Errorf("round trip: got %+v, want %+v", got, ws)
		}
	}
}

// The layout is part of the protocol: pin it.
func TestWaitLayout(t *testing.T) {
	b := AppendWaits(nil, []Wait{{Kind: WaitSend, TimedOut: true, Peer: 0x0102, Tag: 0x0102030405060708, Age: 0x1122}})
	// kind, flags, reserved, peer, tag, age
	want := "02" + "01" + "0000" + "02010000" + "0807060504030201" + "2211000000000000"
	if got := fmt.Sprintf("%x", b); got != want {
		t.Errorf("encoding\n got %s\nwant %s", got, want)
	}
}

func TestDecodeWaitsErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		text   string
	}{
		{"no kind", func(b []byte) []byte { b[0] = 0; return b }, "unknown kind 0"},
		{"unknown kind", func(b []byte) []byte { b[WaitSize] = 3; return b }, "unknown kind 3"},
		{"flags", func(b []byte) []byte { b[1] = 2; return b }, "flags"},
		{"reserved", func(b []byte) []byte { b[3] = 1; return b }, "reserved"},
		{"rank too large", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], MaxWorldSize); return b }, "rank 1048576"},
		{"negative age", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16:], math.MaxUint64); return b }, "age"},
		{"short", func(b []byte) []byte { return b[:WaitSize+1] }, "multiple of 24"},
		{"too many", func(b []byte) []byte { return append(b, make([]byte, MaxWaits*WaitSize)...) }, "up to 192"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendWaits(nil, []Wait{{Kind: WaitRecv, Peer: 2, Tag: 9, Age: time.Second}, {Kind: WaitSend, Peer: 1}})
			ws, err := DecodeWaits(tt.mutate(b))
			if !errors.Is(err, ErrBadHeader) || ws != nil {
				t.Fatalf("got %+v, %v; want ErrBadHeader", ws, err)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q does not mention %q", err, tt.text)
			}
		})
	}
}

func TestWaitKindString(t *testing.T) {
	for k, want := range map[WaitKind]string{WaitRecv: "recv", WaitSend: "send", 7: "wait(7)"} {
		if got := k.String(); got != want {
			t.Errorf("WaitKind(%d).String() = %q, want %q", k, got, want)
		}
	}
}
