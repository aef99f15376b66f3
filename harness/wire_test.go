package harness

import (
	"fmt"
	"testing"
	"time"

	"github.com/distbench/distbench/harness/job"
)

// A point's record carries the bytes each rank really sent and received per
// operation, over the timed iterations only (not the check run, the
// warm-up, nor the time budget's own allreduce), and the busiest rank's.
func TestMeasureWireBytes(t *testing.T) {
	const n, size = 4, 4 << 20
	for _, tc := range []struct {
		strategy   string
		collective string
		opts       map[string]string
		budget     time.Duration
		sent, recv func(r int) float64
	}{
		{"ring", "allreduce", nil, 0, func(int) float64 { return 1.5 * size }, func(int) float64 { return 1.5 * size }},
		{"ring", "allreduce", nil, time.Hour, func(int) float64 { return 1.5 * size }, func(int) float64 { return 1.5 * size }},
		// The chain: the root sends, the last rank receives, the others both.
		{"ring", "broadcast", nil, 0,
			func(r int) float64 { return map[bool]float64{true: 0, false: size}[r == n-1] },
			func(r int) float64 { return map[bool]float64{true: 0, false: size}[r == 0] }},
		{"ps", "allreduce", map[string]string{"placement": "colocated"}, 0,
			func(int) float64 { return 1.5 * size }, func(int) float64 { return 1.5 * size }},
	} {
		t.Run(fmt.Sprintf("%s/%s/budget=%v", tc.strategy, tc.collective, tc.budget), func(t *testing.T) {
			spec := &job.Spec{
				Strategy: tc.strategy, NP: n, Timeout: time.Minute, Iters: 5, Warmup: 1, Check: true,
				TimeBudget: tc.budget, Options: tc.opts,
				Points: []job.Point{{Collective: tc.collective, Bytes: size, DType: "float32", Op: "sum"}},
			}
			recs := measureInProcess(t, spec)
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			r := recs[0]
			if len(r.WireSentBytes) != n || len(r.WireRecvBytes) != n {
				t.Fatalf("wire bytes for %d and %d ranks, want %d", len(r.WireSentBytes), len(r.WireRecvBytes), n)
			}
			busiest := 0.0
			for rank := range n {
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"sent", r.WireSentBytes[rank], tc.sent(rank)}, {"received", r.WireRecvBytes[rank], tc.recv(rank)}} {
					if c.got < c.want*0.99-64 || c.got > c.want*1.01+64 {
						t.Errorf("rank %d %s %.0f bytes per operation, want %.0f ± 1%%", rank, c.what, c.got, c.want)
					}
					busiest = max(busiest, c.want)
				}
			}
			if r.WireBusiestBytes < busiest*0.99 || r.WireBusiestBytes > busiest*1.01 {
				t.Errorf("busiest %.0f bytes, want %.0f", r.WireBusiestBytes, busiest)
			}
			if r.WireServerSentBytes != nil || r.WireServerRecvBytes != nil {
				t.Errorf("server bytes %v %v without dedicated servers", r.WireServerSentBytes, r.WireServerRecvBytes)
			}
		})
	}
}
