package tree

import (
	"fmt"
	"sync"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/shapes"
)

// The bytes a tree allreduce really sends are what its schedule predicts:
// recursive doubling exchanges the whole buffer log2 n times (at np 4); the
// double binary tree moves each half up and down its tree, so a rank sends
// a half to its parent and one to each child in each tree, and receives as
// many, which is 2(n−1)/n × S on average but not on every rank.
func TestWireBytes(t *testing.T) {
	const count = 1 << 20 // 4 MiB of float32
	const size = 4 * count
	dbtree := func(n, r int) (sent, recv float64) {
		for _, nd := range shapes.DoubleTree(n, r) {
			half := float64(size) / 2
			links := float64(len(nd.Children))
			if nd.Parent >= 0 {
				links++
			}
			sent += links * half // up to the parent, down to the children
			recv += links * half
		}
		return sent, recv
	}
	for _, tc := range []struct {
		algo string
		n    int
		want func(n, r int) (sent, recv float64)
	}{
		{"rd", 4, func(n, r int) (float64, float64) { return 2 * size, 2 * size }},
		{"rd", 5, func(n, r int) (float64, float64) { // rank 4 folds into rank 0
			switch r {
			case 0:
				return 3 * size, 3 * size
			case 4:
				return size, size
			}
			return 2 * size, 2 * size
		}},
		{"dbtree", 4, dbtree},
		{"dbtree", 7, dbtree},
	} {
		t.Run(fmt.Sprintf("%s/np%d", tc.algo, tc.n), func(t *testing.T) {
			comms := memWorld(t, tc.n, map[string]string{"algo": tc.algo})
			defer func() {
				for _, c := range comms {
					c.Close()
				}
			}()
			before := make([]collective.WireBytes, tc.n)
			for r, c := range comms {
				before[r] = c.(collective.WireCounter).WireBytes()
			}
			errs := make([]error, tc.n)
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Go(func() {
					errs[r] = c.AllReduce(t.Context(), collective.NewTensor(collective.Float32, count), collective.Sum)
				})
			}
			wg.Wait()
			var total float64
			for r, c := range comms {
				if errs[r] != nil {
					t.Fatalf("rank %d: %v", r, errs[r])
				}
				w := c.(collective.WireCounter).WireBytes()
				sent, recv := float64(w.Sent-before[r].Sent), float64(w.Recv-before[r].Recv)
				total += sent
				wantSent, wantRecv := tc.want(tc.n, r)
				if d := sent/wantSent - 1; d > 0.01 || d < -0.01 {
					t.Errorf("rank %d sent %.0f bytes, want %.0f ± 1%%", r, sent, wantSent)
				}
				if d := recv/wantRecv - 1; d > 0.01 || d < -0.01 {
					t.Errorf("rank %d received %.0f bytes, want %.0f ± 1%%", r, recv, wantRecv)
				}
			}
			if tc.algo == "dbtree" {
				// Over all ranks, exactly what busbw assumes per rank, n times.
				if want := 2 * float64(tc.n-1) * size; total < 0.99*want || total > 1.01*want {
					t.Errorf("ranks sent %.0f bytes in all, want 2(n−1) × S = %.0f", total, want)
				}
			}
		})
	}
}
