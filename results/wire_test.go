package results_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// The busiest figure is the largest byte count in either direction, over
// ranks and dedicated servers alike.
func TestSetWire(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		sent, recv, ssent, srv []float64
		busiest, busiestSent   float64
	}{
		{"ring", []float64{6, 6, 6}, []float64{6, 6, 6}, nil, nil, 6, 6},
		{"gather root receives most", []float64{0, 4, 4}, []float64{8, 0, 0}, nil, nil, 8, 4},
		{"a dedicated server", []float64{4, 4}, []float64{4, 4}, []float64{8}, []float64{8}, 8, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r results.Record
			r.SetWire(tc.sent, tc.recv, tc.ssent, tc.srv)
			if r.WireBusiestBytes != tc.busiest || r.WireBusiestSent() != tc.busiestSent || !r.HasWire() {
				t.Errorf("busiest %v, busiest sent %v, has %v; want %v, %v, true", r.WireBusiestBytes, r.WireBusiestSent(), r.HasWire(), tc.busiest, tc.busiestSent)
			}
		})
	}
}

// Rounds of a point merge into the mean of their bytes per rank; rounds
// that disagree in shape, or a round without bytes (an older build), leave
// the merged record without them rather than averaging unlike things.
func TestMergeRoundsWire(t *testing.T) {
	wired := func(round int, sent ...float64) results.Record {
		r := roundRec(t, "p", round, 2, 10, 11, 12)
		r.SetWire(sent, sent, nil, nil)
		return r
	}
	for _, tc := range []struct {
		name string
		in   []results.Record
		want string
	}{
		{"mean", []results.Record{wired(1, 6, 6), wired(2, 6, 8)}, "[6 7] [6 7] 7"},
		{"shapes differ", []results.Record{wired(1, 6, 6), wired(2, 6, 6, 6)}, "[] [] 0"},
		{"one round without", []results.Record{wired(1, 6, 6), roundRec(t, "p", 2, 2, 10, 11, 12)}, "[] [] 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := results.MergeRounds(tc.in, results.Fill)
			if len(out) != 1 {
				t.Fatalf("%d records", len(out))
			}
			m := out[0]
			if got := fmt.Sprint(m.WireSentBytes, m.WireRecvBytes, m.WireBusiestBytes); got != tc.want {
				t.Errorf("merged wire %s, want %s", got, tc.want)
			}
			if len(m.WireSentBytes) > 0 && &m.WireSentBytes[0] == &tc.in[0].WireSentBytes[0] {
				t.Errorf("merged record shares its bytes with a round's")
			}
		})
	}
}

// Records without wire bytes (older files) say nothing of them, and read
// back without them.
func TestWireOmitted(t *testing.T) {
	b, err := json.Marshal(results.Record{Kind: results.KindCollective})
	if err != nil {
		t.Fatal(err)
	}
	var r results.Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.HasWire() || strings.Contains(string(b), "wire_") {
		t.Errorf("a record without wire bytes reads %s", b)
	}
}

// A rank's share of the traffic: 1/n on a ring, 1/2 for a star's hub, 0
// where nothing was counted or the rank is out of range.
func TestRankTrafficShare(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sent, recv []float64
		rank       int
		want       float64
	}{
		{"ring", []float64{6, 6, 6, 6}, []float64{6, 6, 6, 6}, 0, 0.25},
		{"star hub", []float64{9, 1, 1, 1}, []float64{3, 3, 3, 3}, 0, 0.5},
		{"star leaf", []float64{9, 1, 1, 1}, []float64{3, 3, 3, 3}, 2, 1.0 / 6},
		{"no bytes", nil, nil, 0, 0},
		{"rank out of range", []float64{1, 1}, []float64{1, 1}, 2, 0},
		{"nothing moved", []float64{0, 0}, []float64{0, 0}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r results.Record
			r.SetWire(tc.sent, tc.recv, nil, nil)
			if got := r.RankTrafficShare(tc.rank); got != tc.want {
				t.Errorf("share of rank %d: %v, want %v", tc.rank, got, tc.want)
			}
		})
	}
}
