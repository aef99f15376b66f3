package collective

import (
	"math"
	"testing"
)

func TestHalfRoundTrip(t *testing.T) {
	// Every finite binary16 value survives widening and narrowing.
	for h := range uint32(1 << 16) {
		f := Float16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := Float32ToFloat16(f); back != uint16(h) {
			t.Fatalf("float16 %#04x -> %v -> %#04x", h, f, back)
		}
	}
	for _, tc := range []struct {
		f    float32
		want uint16
	}{{1, 0x3c00}, {65504, 0x7bff}, {65520, 0x7c00}, {1e-8, 0}, {5.96e-8, 1}, {-2, 0xc000}} {
		if got := Float32ToFloat16(tc.f); got != tc.want {
			t.Errorf("Float32ToFloat16(%v) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
	for _, tc := range []struct {
		f    float32
		want uint16
	}{{1, 0x3f80}, {1.00390625, 0x3f80}, {1.01171875, 0x3f82}, {-0.5, 0xbf00}} {
		if got := Float32ToBFloat16(tc.f); got != tc.want {
			t.Errorf("Float32ToBFloat16(%v) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
}
