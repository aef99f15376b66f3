package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestShiftMatchesIm2col checks the shifted-row kernels against imSame and
// col2imSame, bit for bit, for a group of images at once, and unfold and
// fold (as Conv2d calls them): maps whose size is and is not a multiple of
// 16, 3×3 and 5×5 kernels, one image and several. Sentinels after the
// patch rows must survive.
func TestShiftMatchesIm2col(t *testing.T) {
	if !useShiftAsm {
		t.Skip("no AVX-512: Conv2d uses imSame and col2imSame")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ c, h, w, k, g int }{
		{2, 28, 28, 3, 1}, {3, 14, 14, 3, 4}, {2, 7, 7, 3, 16}, {1, 5, 9, 5, 3}, {2, 4, 4, 3, 2}, {1, 1, 1, 3, 2}, {2, 3, 17, 3, 2},
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			c, h, w, k, g := tc.c, tc.h, tc.w, tc.k, tc.g
			pad, p, kk := k/2, tc.h*tc.w, k*k
			inSize := c * p
			x := randSlice(rng, g*inSize)
			ld := g * p
			want := make([]float32, c*kk*ld+5)
			got := make([]float32, len(want))
			for i := range got {
				got[i], want[i] = float32(math.NaN()), -7 // every entry written; the tail kept
			}
			for i := c * kk * ld; i < len(got); i++ {
				got[i] = -7
			}
			for j := 0; j < g; j++ {
				imSame(x[j*inSize:(j+1)*inSize], c, h, w, k, pad, want[j*p:], ld)
			}
			m := newTapMasks(nil, h, w, k, pad)
			m.unfold(got, x, 0, c, inSize, g)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("im2col: col[%d] = %v, imSame %v", i, got[i], want[i])
				}
			}
			// The adjoint, from a random patch matrix.
			col := randSlice(rng, c*kk*ld)
			wantX := make([]float32, g*inSize+3)
			gotX := make([]float32, len(wantX))
			for i := g * inSize; i < len(gotX); i++ {
				gotX[i], wantX[i] = -7, -7
			}
			colCopy := append([]float32(nil), col...) // col2imSame zeroes entries of col
			for j := 0; j < g; j++ {
				col2im(colCopy[j*p:], ld, c, h, w, k, 1, pad, h, w, wantX[j*inSize:(j+1)*inSize])
			}
			for ci := 0; ci < c; ci++ {
				for tap := 0; tap < kk; tap++ {
					m.col2imShift(gotX[ci*p:], col[(ci*kk+tap)*ld:], inSize, tap, g)
				}
			}
			for i := range gotX {
				if gotX[i] != wantX[i] {
					t.Fatalf("col2im: x[%d] = %v, col2imSame %v", i, gotX[i], wantX[i])
				}
			}
			// fold, as Conv2d calls it, adds the centre tap first: the same
			// sums in another order, so equal to rounding, and every pixel
			// written over whatever dx held.
			foldX := make([]float32, len(wantX))
			for i := range foldX {
				foldX[i] = float32(math.NaN())
			}
			copy(foldX[g*inSize:], wantX[g*inSize:])
			m.fold(foldX, col, ld, 0, c, inSize, g)
			for i := range foldX {
				if d := math.Abs(float64(foldX[i] - wantX[i])); !(d <= 1e-5*(1+math.Abs(float64(wantX[i])))) {
					t.Fatalf("fold: x[%d] = %v, col2imSame %v", i, foldX[i], wantX[i])
				}
			}
		})
	}
}
