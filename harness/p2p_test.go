package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/results"
)

// p2pNames are the point-to-point benchmarks, measured by measureP2P
// rather than by a benchmarks entry.
var p2pNames = map[string]bool{"p2p-latency": true, "p2p-bw": true, "p2p-bibw": true}

// TestMeasureP2P runs OSU's three point-to-point benchmarks on an in-memory
// world, at np 2 and at np 3 (rank 2 idles), with the points' own
// iterations: every byte must arrive right, every record carry as many
// samples as its point's iterations, and OSU's figure be positive.
func TestMeasureP2P(t *testing.T) {
	for _, np := range []int{2, 3} {
		for name := range p2pNames {
			t.Run(fmt.Sprintf("np=%d/%s", np, name), func(t *testing.T) {
				spec := &job.Spec{Strategy: "ring", NP: np, Timeout: time.Minute, Iters: 3, Warmup: 1, Check: true, KeepSamples: true}
				for i, size := range []int64{1, 4096, 65536} {
					spec.Points = append(spec.Points, job.Point{Collective: name, Bytes: size, DType: "uint8", Window: 4 * i, Iters: 5 - i, Warmup: i})
				}
				recs := measureInProcess(t, spec)
				if len(recs) != len(spec.Points) {
					t.Fatalf("%d records for %d points", len(recs), len(spec.Points))
				}
				for i, r := range recs {
					p := spec.Points[i]
					if r.Wrong != 0 || r.Error != "" {
						t.Errorf("%s: wrong %d, error %q", r.Point, r.Wrong, r.Error)
					}
					if len(r.SamplesUs) != p.Iters || r.Iters != p.Iters || r.Warmup != p.Warmup {
						t.Errorf("%s: %d samples, iters %d, warmup %d; want %d, %d", r.Point, len(r.SamplesUs), r.Iters, r.Warmup, p.Iters, p.Warmup)
					}
					fig, ok := results.OSUFigure(r)
					if !ok || !(fig > 0) || !(r.AlgBWGBs > 0) || r.BusBWGBs != r.AlgBWGBs || r.Bytes != p.Bytes {
						t.Errorf("%s: OSU figure %v (%v), algbw %v, busbw %v, bytes %d", r.Point, fig, ok, r.AlgBWGBs, r.BusBWGBs, r.Bytes)
					}
					if (p.Window > 0) != strings.Contains(r.Point, "/window=") {
						t.Errorf("%s: the point's id and its window %d disagree", r.Point, p.Window)
					}
				}
			})
		}
	}
}

// TestP2PBandwidth checks OSU's arithmetic on known iteration times.
func TestP2PBandwidth(t *testing.T) {
	times := []float64{10, 30} // us; t_total 40us over 2 iterations
	tests := []struct {
		p    job.Point
		want float64 // GB/s
	}{
		// Latency 40/(2·2) = 10us one way; 1000 bytes in 10us is 0.1 GB/s.
		{job.Point{Collective: "p2p-latency"}, 0.1},
		// 1000 bytes × window 4 × 2 iterations / 40us = 0.2 GB/s.
		{job.Point{Collective: "p2p-bw", Window: 4}, 0.2},
		// Both directions: twice that.
		{job.Point{Collective: "p2p-bibw", Window: 4}, 0.4},
		// No window: OSU's 64.
		{job.Point{Collective: "p2p-bw"}, 3.2},
	}
	for _, tt := range tests {
		if got := p2pBandwidth(tt.p, 1000, times); fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", tt.want) {
			t.Errorf("%s window %d: %v GB/s, want %v", tt.p.Collective, tt.p.Window, got, tt.want)
		}
	}
}
