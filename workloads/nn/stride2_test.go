package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestStride2 checks the stride-2 row kernels against the plain loops for
// every row length up to three 16-lane blocks and a few row counts and
// strides, with sentinels around every row: no float outside the rows'
// extents may change, and the sums must be the loops' bits.
func TestStride2(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, rows := range []int{1, 2, 5} {
		for n := 0; n <= 49; n++ {
			for _, pad := range []int{0, 3} {
				t.Run(fmt.Sprintf("rows=%d/n=%d/pad=%d", rows, n, pad), func(t *testing.T) {
					srcStride, dstStride := 2*n+pad, n+pad
					src := make([]float32, rows*srcStride+8)
					for i := range src {
						src[i] = rng.Float32() - 0.5
					}
					dst := make([]float32, rows*dstStride+8)
					want := make([]float32, len(dst))
					for i := range dst {
						dst[i] = float32(i) // sentinels
					}
					copy(want, dst)
					gatherStride2Go(want, dstStride, src, srcStride, n, rows)
					gatherStride2(dst, dstStride, src, srcStride, n, rows)
					for i := range dst {
						if dst[i] != want[i] {
							t.Fatalf("gather: dst[%d] = %v, want %v", i, dst[i], want[i])
						}
					}
					// The adjoint: src-shaped rows added onto dst-shaped
					// (2n-wide) rows.
					acc := make([]float32, rows*srcStride+8)
					for i := range acc {
						acc[i] = rng.Float32()
					}
					wantAcc := append([]float32(nil), acc...)
					scatterAddStride2Go(wantAcc, srcStride, dst, dstStride, n, rows)
					scatterAddStride2(acc, srcStride, dst, dstStride, n, rows)
					for i := range acc {
						if acc[i] != wantAcc[i] {
							t.Fatalf("scatter-add: acc[%d] = %v, want %v", i, acc[i], wantAcc[i])
						}
					}
				})
			}
		}
	}
}
