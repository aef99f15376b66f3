package job

import (
	"strings"
	"testing"
	"time"

	_ "github.com/distbench/distbench/strategies/ring"
)

// TestP2PValidate: what p2p points need, refused in one plain line.
func TestP2PValidate(t *testing.T) {
	tests := []struct {
		np   int
		p    Point
		want string
	}{
		{1, Point{Collective: "p2p-latency", DType: "uint8"}, "p2p-latency: np 1: needs ranks 0 and 1 (accepted: np 2 or more)"},
		{2, Point{Collective: "p2p-bw", DType: "uint8", Window: -1}, "p2p-bw: window -1 out of range"},
		{2, Point{Collective: "p2p-bw", DType: "uint8", Iters: -1}, "p2p-bw: iterations -1, warm-up 0: must be 0 or more"},
		{2, Point{Collective: "allreduce", DType: "float32", Op: "sum", Window: 8}, "allreduce: window and per-point iterations are for the p2p benchmarks only"},
	}
	for _, tt := range tests {
		spec := &Spec{Strategy: "ring", NP: tt.np, Timeout: time.Minute, Iters: 1, Points: []Point{tt.p}}
		err := spec.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v at np %d: %v, want %q", tt.p, tt.np, err, tt.want)
		}
	}
}
