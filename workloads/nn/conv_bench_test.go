package nn

import (
	"fmt"
	"testing"
)

// BenchmarkConv2d times one 3×3 convolution's Forward and Backward at
// ResNet-20's shapes on 28×28 inputs, batch 64 on one worker (one rank of
// np 2 at global batch 128, one core): the chunked im2col, the packed
// weights and the products together, and for the same-size ones F(2×2,
// 3×3) beside it (path=winograd; path=winograd-go with the Go transforms,
// which is why only AVX-512 turns Winograd on). GFLOP/s counts the
// multiply-adds of a direct convolution (forward W·col; backward dW and
// dcol, twice that), whatever the path does.
func BenchmarkConv2d(b *testing.B) {
	defer func(u, a bool) { useWinograd, winogradAsm = u, a }(useWinograd, winogradAsm)
	for _, tc := range []struct{ in, out, hw, stride int }{
		{16, 16, 28, 1}, {16, 32, 28, 2}, {32, 32, 14, 1}, {64, 64, 7, 1},
	} {
		for _, path := range []string{"im2col", "winograd", "winograd-go"} {
			useWinograd, winogradAsm = path != "im2col", path == "winograd"
			if useWinograd && (tc.stride != 1 || !useShiftAsm) {
				continue
			}
			const n = 64
			conv := NewConv2d("c", tc.in, tc.out, 3, tc.stride, 1, false)
			if _, err := NewNet("conv", conv, nil, 1); err != nil {
				b.Fatal(err)
			}
			x := NewTensor(n, tc.in, tc.hw, tc.hw)
			for i := range x.Data {
				x.Data[i] = float32(i%13) * 0.1
			}
			ctx := &Ctx{Train: true, Workers: 1}
			y := conv.Forward(ctx, x)
			dy := NewTensor(y.Shape...)
			for i := range dy.Data {
				dy.Data[i] = float32(i%7) * 0.1
			}
			oh := conv.OutSize(tc.hw)
			flops := float64(2 * n * tc.out * tc.in * 9 * oh * oh)
			name := fmt.Sprintf("%dx%d-%dto%d-s%d/path=%s", tc.hw, tc.hw, tc.in, tc.out, tc.stride, path)
			b.Run(name+"/forward", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					conv.Forward(ctx, x)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(name+"/backward", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					conv.Backward(ctx, dy)
				}
				b.ReportMetric(2*flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
