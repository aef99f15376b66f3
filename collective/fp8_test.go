package collective

import (
	"math"
	"testing"
)

// TestFloat8 checks the FP8 formats against values from the OCP FP8
// specification, and that every finite byte survives a round trip.
func TestFloat8(t *testing.T) {
	tests := []struct {
		name   string
		widen  func(uint8) float32
		narrow func(float32) uint8
		pairs  map[uint8]float32
		max    float32
	}{
		{"e4m3", Float8E4M3ToFloat32, Float32ToFloat8E4M3,
			map[uint8]float32{0x00: 0, 0x38: 1, 0x40: 2, 0x7e: 448, 0x01: 1.0 / 512, 0x08: 1.0 / 64, 0xb8: -1, 0x4c: 6}, 448},
		{"e5m2", Float8E5M2ToFloat32, Float32ToFloat8E5M2,
			map[uint8]float32{0x00: 0, 0x3c: 1, 0x40: 2, 0x7b: 57344, 0x01: 1.0 / 65536, 0x04: 1.0 / 16384, 0xbc: -1}, 57344},
	}
	for _, tt := range tests {
		for b, v := range tt.pairs {
			if got := tt.widen(b); got != v {
				t.Errorf("%s: widen(%#x) = %v, want %v", tt.name, b, got, v)
			}
			if got := tt.narrow(v); got != b {
				t.Errorf("%s: narrow(%v) = %#x, want %#x", tt.name, v, got, b)
			}
		}
		for i := range 256 {
			v := tt.widen(uint8(i))
			if v != v || math.IsInf(float64(v), 0) {
				continue
			}
			if got := tt.narrow(v); tt.widen(got) != v {
				t.Errorf("%s: %#x (%v) narrows to %#x (%v)", tt.name, i, v, got, tt.widen(got))
			}
		}
		if got := tt.widen(tt.narrow(1e9)); got != tt.max {
			t.Errorf("%s: 1e9 saturates to %v, want %v", tt.name, got, tt.max)
		}
		if got := tt.widen(tt.narrow(float32(math.NaN()))); got == got {
			t.Errorf("%s: NaN narrows to %v", tt.name, got)
		}
		// Integers up to 2^(mantissa+1) are exact; 17 (e4m3) and 9 (e5m2)
		// round to even.
		for k := range 9 {
			if got := tt.widen(tt.narrow(float32(k))); got != float32(k) {
				t.Errorf("%s: %d is %v", tt.name, k, got)
			}
		}
	}
	if got := Float8E4M3ToFloat32(Float32ToFloat8E4M3(17)); got != 16 {
		t.Errorf("e4m3: 17 rounds to %v, want 16 (ties to even)", got)
	}
	if got := Float8E5M2ToFloat32(Float32ToFloat8E5M2(9)); got != 8 {
		t.Errorf("e5m2: 9 rounds to %v, want 8 (ties to even)", got)
	}
}
