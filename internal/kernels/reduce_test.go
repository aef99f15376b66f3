package kernels

import (
	"fmt"
	"math"
	"testing"

	"github.com/distbench/distbench/collective"
)

func TestReduce(t *testing.T) {
	tests := []struct {
		dt         collective.DType
		op         collective.Op
		a, b, want float64
	}{
		{collective.Float32, collective.Sum, 1.5, 2.25, 3.75}, {collective.Float32, collective.Prod, 3, -2, -6}, {collective.Float32, collective.Max, -1, -2, -1}, {collective.Float32, collective.Min, -1, -2, -2},
		{collective.Float64, collective.Sum, 1e300, 1e300, 2e300}, {collective.Float64, collective.Max, 1, 2, 2},
		{collective.Int32, collective.Sum, math.MaxInt32, 1, math.MinInt32}, {collective.Int32, collective.Min, -5, 3, -5},
		{collective.Int64, collective.Prod, 1 << 31, 4, 1 << 33},
		{collective.Uint8, collective.Sum, 250, 10, 4}, {collective.Uint8, collective.Max, 7, 200, 200},
		{collective.Float16, collective.Sum, 1, 2, 3}, {collective.Float16, collective.Prod, 0.5, 0.5, 0.25}, {collective.Float16, collective.Max, -3, 2, 2},
		{collective.BFloat16, collective.Sum, 128, 128, 256}, {collective.BFloat16, collective.Min, 1, -1, -1},
		{collective.Float32, collective.Avg, 2, 4, 6}, // Avg reduces as Sum; Divide finishes it
		{collective.Int8, collective.Sum, 120, 10, -126}, {collective.Int8, collective.Min, -3, 4, -3}, {collective.Int8, collective.Prod, -4, 8, -32},
		{collective.Uint32, collective.Sum, math.MaxUint32, 2, 1}, {collective.Uint32, collective.Max, 7, 1 << 31, 1 << 31},
		{collective.Uint64, collective.Prod, 1 << 40, 8, 1 << 43}, {collective.Uint64, collective.Min, 3, 9, 3},
		{collective.Float8E4M3, collective.Sum, 16, 2, 18}, {collective.Float8E4M3, collective.Sum, 16, 1, 16}, // 17 ties to even
		{collective.Float8E4M3, collective.Max, -2, 0.5, 0.5}, {collective.Float8E4M3, collective.Prod, 300, 2, 448}, // saturates
		{collective.Float8E5M2, collective.Sum, 8, 2, 10}, {collective.Float8E5M2, collective.Min, -4, 3, -4}, {collective.Float8E5M2, collective.Prod, 0.25, 4, 1},
		{collective.Int32, collective.MulSum, 3, 4, 7}, // MulSum reduces as Sum; Scale pre-multiplies
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.dt, tt.op), func(t *testing.T) {
			for _, n := range []int{1, 5, 9} { // exercise the unrolled loop and its tail
				a, b := collective.NewTensor(tt.dt, n), collective.NewTensor(tt.dt, n)
				for i := range n {
					a.SetFloat64(i, tt.a)
					b.SetFloat64(i, tt.b)
				}
				Reduce(tt.dt, tt.op, a.Data, b.Data)
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
	a, b := collective.FromFloat32([]float32{1, float32(math.NaN())}), collective.FromFloat32([]float32{float32(math.NaN()), 1})
	Reduce(collective.Float32, collective.Max, a.Data, b.Data)
	for i, v := range a.Float32s() {
		if !math.IsNaN(float64(v)) {
			t.Errorf("element %d = %v, want NaN", i, v)
		}
	}
}

func TestDivide(t *testing.T) {
	for _, dt := range collective.DTypes() {
		x := collective.NewTensor(dt, 3)
		for i := range 3 {
			x.SetFloat64(i, float64(int(3)<<i)) // 3, 6, 12: exact in every type, e5m2's two mantissa bits too
		}
		Divide(x, 3)
		for i := range 3 {
			if got := x.Float64At(i); got != float64(int(1)<<i) {
				t.Errorf("%s element %d = %v, want %v", dt, i, got, 1<<i)
			}
		}
	}
}

// BenchmarkReduce runs each reduction through the Go loops ("generic")
// and through Reduce ("avx2" where it has a kernel) side by side: 64KiB is
// the TCP transport's chunk, in cache; 16MiB streams from memory.
func BenchmarkReduce(b *testing.B) {
	const KiB, MiB = 1 << 10, 1 << 20
	cases := []struct {
		dt    collective.DType
		op    collective.Op
		sizes []int
	}{
		{collective.Float32, collective.Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{collective.Float64, collective.Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{collective.BFloat16, collective.Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{collective.Float16, collective.Sum, []int{64 * KiB, MiB, 16 * MiB}},
		{collective.Float32, collective.Max, []int{MiB}},
		{collective.Float32, collective.Prod, []int{MiB}},
		{collective.Float64, collective.Max, []int{MiB}},
		{collective.Float16, collective.Max, []int{MiB}},
		{collective.Int32, collective.Sum, []int{MiB}},
		{collective.Int8, collective.Sum, []int{MiB}},
		{collective.Float8E4M3, collective.Sum, []int{MiB}},
		{collective.Float8E5M2, collective.Max, []int{MiB}},
	}
	for _, c := range cases {
		for _, size := range c.sizes {
			name := fmt.Sprintf("%s/%s/%dKiB", c.dt, c.op, size/KiB)
			if size >= MiB {
				name = fmt.Sprintf("%s/%s/%dMiB", c.dt, c.op, size/MiB)
			}
			x, y := collective.NewTensor(collective.Uint8, size), collective.NewTensor(collective.Uint8, size)
			for i := range x.Data { // every byte value: fp8's cost depends on the value
				x.Data[i], y.Data[i] = byte(i*7), byte(i*13)
			}
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
					Reduce(c.dt, c.op, x.Data, y.Data)
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

// TestScale: MulSum's pre-multiplication, in each type's arithmetic.
func TestScale(t *testing.T) {
	for _, dt := range collective.DTypes() {
		x := collective.NewTensor(dt, 3)
		for i := range 3 {
			x.SetFloat64(i, float64(i+1))
		}
		Scale(x, 2)
		for i := range 3 {
			if got := x.Float64At(i); got != float64(2*(i+1)) {
				t.Errorf("%s: element %d = %v, want %d", dt, i, got, 2*(i+1))
			}
		}
		Scale(x, 1)
		if got := x.Float64At(2); got != 6 {
			t.Errorf("%s: ×1 changed element 2 to %v", dt, got)
		}
	}
	x := collective.FromInt32([]int32{math.MaxInt32})
	if Scale(x, 2); x.Int32s()[0] != -2 {
		t.Errorf("int32 overflow: %d, want -2 (wraps)", x.Int32s()[0])
	}
}
