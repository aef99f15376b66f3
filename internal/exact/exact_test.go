package exact

import (
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
)

// TestReduceInOrder reduces Value over the ranks with the kernels, in rank
// order and in reverse, as a strategy might, and finds Expected in both,
// for every dtype, op and world size the suite runs: the inputs are exact
// however the partial sums fall.
func TestReduceInOrder(t *testing.T) {
	const count = 64
	for _, dt := range collective.DTypes() {
		for _, op := range collective.Ops() {
			for _, n := range []int{1, 2, 3, 4, 5, 7, 8} {
				for _, reverse := range []bool{false, true} {
					acc := collective.NewTensor(dt, count)
					for k := range n {
						r := k
						if reverse {
							r = n - 1 - k
						}
						in := collective.NewTensor(dt, count)
						Fill(in, op, n, r, 0)
						kernels.Scale(in, premul(op, r))
						if k == 0 {
							copy(acc.Data, in.Data)
							continue
						}
						kernels.Reduce(dt, op, acc.Data, in.Data)
					}
					if op == collective.Avg {
						kernels.Divide(acc, n)
					}
					if w := CountWrong(acc, op, n, 0); w != 0 {
						t.Errorf("%s/%s np=%d reverse=%v: %d of %d wrong", dt, op, n, reverse, w, count)
					}
				}
			}
		}
	}
}

// TestPatternHeld: a broadcast of a pattern is right in every type, fp8's
// rounding of the pattern included.
func TestPatternHeld(t *testing.T) {
	for _, dt := range collective.DTypes() {
		x := collective.NewTensor(dt, 200)
		FillPattern(x, 3, 5)
		if w := CountPattern(x, 3, 5); w != 0 {
			t.Errorf("%s: %d wrong", dt, w)
		}
		if w := CountPattern(x, 4, 5); w == 0 {
			t.Errorf("%s: another rank's pattern passes", dt)
		}
	}
}
