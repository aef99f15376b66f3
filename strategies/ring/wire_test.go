package ring_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/distbench/distbench/collective"
)

// allReduceWire runs one allreduce of count float32s on every rank and
// returns the bytes each rank sent and received for it.
func allReduceWire(t *testing.T, comms []collective.Comm, count int) []collective.WireBytes {
	t.Helper()
	before := make([]collective.WireBytes, len(comms))
	for r, c := range comms {
		before[r] = c.(collective.WireCounter).WireBytes()
	}
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			errs[r] = c.AllReduce(t.Context(), collective.NewTensor(collective.Float32, count), collective.Sum)
		})
	}
	wg.Wait()
	out := make([]collective.WireBytes, len(comms))
	for r, c := range comms {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		w := c.(collective.WireCounter).WireBytes()
		out[r] = collective.WireBytes{Sent: w.Sent - before[r].Sent, Recv: w.Recv - before[r].Recv}
	}
	return out
}

// The bytes a ring allreduce really sends are what busbw's formula assumes:
// the segmented pass sends and receives 2(n−1)/n × S on every rank; the
// whole-buffer ring, (n−1) × S.
func TestWireBytes(t *testing.T) {
	const count = 1 << 20 // 4 MiB
	const size = 4 * count
	worlds := map[string]func(t *testing.T, n int, opts map[string]string) []collective.Comm{
		"mem": func(t *testing.T, n int, opts map[string]string) []collective.Comm {
			comms := memWorld(t, n, opts)
			t.Cleanup(func() {
				for _, c := range comms {
					c.Close()
				}
			})
			return comms
		},
		"tcp": func(t *testing.T, n int, opts map[string]string) []collective.Comm { return tcpWorld(t, n, opts) },
	}
	for _, tc := range []struct {
		algo string
		n    int
		want float64 // bytes sent and received per rank
	}{
		{"rsag", 4, 2 * 3.0 / 4 * size},
		{"rsag", 5, 2 * 4.0 / 5 * size},
		{"whole", 4, 3 * size},
	} {
		for name, world := range worlds {
			t.Run(fmt.Sprintf("%s/%s/np%d", name, tc.algo, tc.n), func(t *testing.T) {
				comms := world(t, tc.n, map[string]string{"algo": tc.algo})
				for r, w := range allReduceWire(t, comms, count) {
					for what, got := range map[string]int64{"sent": w.Sent, "received": w.Recv} {
						if d := float64(got)/tc.want - 1; d > 0.01 || d < -0.01 {
							t.Errorf("np %d: rank %d %s %d bytes, want %.0f ± 1%%", tc.n, r, what, got, tc.want)
						}
					}
				}
			})
		}
	}
}
