package collective

import (
	"fmt"
	"math"
	"testing"
)

func TestReduceInto(t *testing.T) {
	tests := []struct {
		dt         DType
		op         Op
		a, b, want float64
	}{
		{Float32, Sum, 1.5, 2.25, 3.75}, {Float32, Prod, 3, -2, -6}, {Float32, Max, -1, -2, -1}, {Float32, Min, -1, -2, -2},
		{Float64, Sum, 1e300, 1e300, 2e300}, {Float64, Max, 1, 2, 2},
		{Int32, Sum, math.MaxInt32, 1, math.MinInt32}, {Int32, Min, -5, 3, -5},
		{Int64, Prod, 1 << 31, 4, 1 << 33},
		{Uint8, Sum, 250, 10, 4}, {Uint8, Max, 7, 200, 200},
		{Float16, Sum, 1, 2, 3}, {Float16, Prod, 0.5, 0.5, 0.25}, {Float16, Max, -3, 2, 2},
		{BFloat16, Sum, 128, 128, 256}, {BFloat16, Min, 1, -1, -1},
		{Float32, Avg, 2, 4, 6}, // Avg reduces as Sum; DivideInPlace finishes it
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.dt, tt.op), func(t *testing.T) {
			for _, n := range []int{1, 5, 9} { // exercise the unrolled loop and its tail
				a, b := NewTensor(tt.dt, n), NewTensor(tt.dt, n)
				for i := range n {
					a.SetFloat64(i, tt.a)
					b.SetFloat64(i, tt.b)
				}
				ReduceInto(tt.dt, tt.op, a.Data, b.Data)
				for i := range n {
					if got := a.Float64At(i); got != tt.want {
						t.Fatalf("n=%d element %d = %v, want %v", n, i, got, tt.want)
					}
				}
			}
		})
	}
}

func TestMaxPropagatesNaN(t *testing.T) {
	a, b := FromFloat32([]float32{1, float32(math.NaN())}), FromFloat32([]float32{float32(math.NaN()), 1})
	ReduceInto(Float32, Max, a.Data, b.Data)
	for i, v := range a.Float32s() {
		if !math.IsNaN(float64(v)) {
			t.Errorf("element %d = %v, want NaN", i, v)
		}
	}
}

func TestDivideInPlace(t *testing.T) {
	for _, dt := range DTypes() {
		x := NewTensor(dt, 3)
		for i := range 3 {
			x.SetFloat64(i, float64(6*(i+1)))
		}
		DivideInPlace(x, 3)
		for i := range 3 {
			if got := x.Float64At(i); got != float64(2*(i+1)) {
				t.Errorf("%s element %d = %v, want %v", dt, i, got, 2*(i+1))
			}
		}
	}
}

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

// BenchmarkReduceInto runs each reduction through the Go loops ("generic")
// and through ReduceInto ("avx2" where it has a kernel) side by side: 64KiB is
// the TCP transport's chunk, in cache; 16MiB streams from memory.
func BenchmarkReduceInto(b *testing.B) {
	const KiB, MiB = 1 << 10, 1 << 20
	cases := []struct {
		dt    DType
		op    Op
		sizes []int
	}{
		{Float32, Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{Float64, Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{BFloat16, Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{Float16, Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{Float32, Max, []int{MiB}},
		{Float32, Prod, []int{MiB}},
		{Float64, Max, []int{MiB}},
		{Float16, Max, []int{MiB}},
		{Int32, Sum, []int{MiB}},
	}
	for _, c := range cases {
		for _, size := range c.sizes {
			name := fmt.Sprintf("%s/%s/%dKiB", c.dt, c.op, size/KiB)
			if size >= MiB {
				name = fmt.Sprintf("%s/%s/%dMiB", c.dt, c.op, size/MiB)
			}
			x, y := NewTensor(Uint8, size), NewTensor(Uint8, size)
			b.Run(name+"/generic", func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					reduceGeneric(c.dt, c.op, x.Data, y.Data)
				}
			})
			if !hasKernel(c.dt, c.op) {
				continue
			}
			b.Run(name+"/"+kernelName, func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					ReduceInto(c.dt, c.op, x.Data, y.Data)
				}
			})
		}
	}
	b.Run("copy/16MiB", func(b *testing.B) {
		x, y := make([]byte, 16<<20), make([]byte, 16<<20)
		b.SetBytes(16 << 20)
		for b.Loop() {
			copy(x, y)
		}
	})
}
