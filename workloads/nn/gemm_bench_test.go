package nn

import (
	"fmt"
	"testing"
)

func BenchmarkGemmSerial(b *testing.B) {
	cases := []struct {
		ta, tb  bool
		m, n, k int
	}{
		{false, false, 10, 576, 25},
		{false, false, 20, 64, 250},
		{false, true, 20, 250, 64},
		{true, false, 250, 64, 20},
		{false, true, 10, 25, 576},
		{false, false, 64, 3136, 576},
		{false, true, 64, 576, 3136},
		{true, false, 576, 3136, 64},
		// ResNet-20 on 28×28 inputs: forward W·col, dW = dY·colᵀ, dcol = Wᵀ·dY
		// for stages 1 (16ch 28×28), 2 (32ch 14×14), 3 (64ch 7×7, 4 images).
		{false, false, 16, 784, 144},
		{false, true, 16, 144, 784},
		{true, false, 144, 784, 16},
		{false, false, 32, 196, 288},
		{false, true, 32, 288, 196},
		{true, false, 288, 196, 32},
		{false, false, 64, 196, 576},
		{false, true, 64, 576, 196},
		{true, false, 576, 196, 64},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("%v%v-%dx%dx%d", c.ta, c.tb, c.m, c.n, c.k), func(b *testing.B) {
			a := make([]float32, c.m*c.k)
			bb := make([]float32, c.k*c.n)
			cc := make([]float32, c.m*c.n)
			for i := range a {
				a[i] = float32(i%7) * 0.1
			}
			for i := range bb {
				bb[i] = float32(i%5) * 0.1
			}
			lda, ldb := c.k, c.n
			if c.ta {
				lda = c.m
			}
			if c.tb {
				ldb = c.k
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				gemmSerial(c.ta, c.tb, c.m, c.n, c.k, 1, a, lda, bb, ldb, 1, cc, c.n)
			}
			b.ReportMetric(float64(2*c.m*c.n*c.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
