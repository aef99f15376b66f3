package nn

import (
	"fmt"
	"testing"
)

func BenchmarkIm2col(b *testing.B) {
	for _, tc := range []struct{ c, h, w, k, s, p int }{
		{1, 28, 28, 5, 1, 0},  // lenet conv1
		{10, 12, 12, 5, 1, 0}, // lenet conv2
		{16, 32, 32, 3, 1, 1}, // resnet20 stage 1
	} {
		oh, ow := ConvOut(tc.h, tc.k, tc.s, tc.p), ConvOut(tc.w, tc.k, tc.s, tc.p)
		x := make([]float32, tc.c*tc.h*tc.w)
		col := make([]float32, tc.c*tc.k*tc.k*oh*ow)
		b.Run(fmt.Sprintf("im2col-%v", tc), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				im2col(x, tc.c, tc.h, tc.w, tc.k, tc.s, tc.p, oh, ow, col, oh*ow)
			}
		})
		b.Run(fmt.Sprintf("col2im-%v", tc), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				col2im(col, oh*ow, tc.c, tc.h, tc.w, tc.k, tc.s, tc.p, oh, ow, x)
			}
		})
	}
	for _, tc := range []struct{ n, c, h, w int }{{64, 10, 24, 24}, {64, 20, 8, 8}} {
		x := NewTensor(tc.n, tc.c, tc.h, tc.w)
		m := NewMaxPool2d(2, 2, 0)
		b.Run(fmt.Sprintf("maxpool-%v", tc), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				m.Forward(&Ctx{Workers: 1}, x)
			}
		})
		b.Run(fmt.Sprintf("maxpool-back-%v", tc), func(b *testing.B) {
			y := m.Forward(&Ctx{Workers: 1}, x)
			for i := 0; i < b.N; i++ {
				m.Backward(&Ctx{Workers: 1}, y)
			}
		})
	}
}
