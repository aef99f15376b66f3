package costmodel

import (
	"slices"
	"testing"

	"github.com/distbench/distbench/results"
)

func TestLateness(t *testing.T) {
	for _, tc := range []struct {
		name string
		recs []results.Record
		want []float64
	}{
		{"none", nil, nil},
		{"one rank", []results.Record{{Kind: results.KindCollective, RankMedianUs: []float64{10}}}, nil},
		{"failed", []results.Record{{Kind: results.KindCollective, Error: "x", RankMedianUs: []float64{10, 5}}}, nil},
		{"late rank waits least", []results.Record{{Kind: results.KindCollective, RankMedianUs: []float64{100, 60, 100}}},
			[]float64{0, 40e-6, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Lateness(tc.recs)
			if !slices.EqualFunc(got, tc.want, func(a, b float64) bool { return a-b < 1e-15 && b-a < 1e-15 }) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	d := DrawDelays(5, []float64{1, 2}, 7)
	for _, x := range d {
		if x != 1 && x != 2 {
			t.Errorf("DrawDelays drew %v, not one of the samples", x)
		}
	}
	if !slices.Equal(d, DrawDelays(5, []float64{1, 2}, 7)) {
		t.Error("DrawDelays is not deterministic for a seed")
	}
}

func TestForRecord(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		opts     map[string]string
		want     string // "" for none
	}{
		{"ring", nil, "ring"},
		{"ring", map[string]string{"algo": "rsag"}, "ring/rsag"},
		{"ring", map[string]string{"algo": "auto"}, "ring"},
		{"ring", map[string]string{"chunk": "64KiB"}, ""},
		{"tree", map[string]string{"algo": "rd"}, "tree/rd"},
		{"ps", nil, "ps"},
		{"ps", map[string]string{"placement": "dedicated"}, "ps/dedicated"},
		{"ps", map[string]string{"transport": "grpc"}, ""},
		{"ps", map[string]string{"transport": "mesh"}, "ps"},
		{"gloo", nil, ""},
		{"ring/broadcast", nil, "ring/broadcast"},
		{"ring", map[string]string{"algo": "hier"}, "ring/hier"},
		{"ring", map[string]string{"algo": "hier", "inter": "auto"}, "ring/hier"},
		{"ring", map[string]string{"algo": "hier", "inter": "rsag"}, "ring/hier/rsag"},
		{"ring", map[string]string{"algo": "hier", "inter": "whole"}, "ring/hier/whole"},
		{"tree", map[string]string{"algo": "hier", "inter": "dbtree"}, "tree/hier/dbtree"},
		{"tree", map[string]string{"algo": "hier", "inter": "rd"}, "tree/hier/rd"},
		{"tree", map[string]string{"algo": "hier", "inter": "bogus"}, ""},
		{"tree", map[string]string{"algo": "rd", "inter": "dbtree"}, ""}, // the strategy refuses it
		{"ps", map[string]string{"inter": "rd"}, ""},
		{"ps", map[string]string{"local_agg": "1"}, "ps/local_agg"},
		{"ps", map[string]string{"local_agg": "0"}, "ps"},
		{"ps", map[string]string{"local_agg": "1", "transport": "mesh"}, "ps/local_agg"},
		{"ps", map[string]string{"local_agg": "1", "placement": "dedicated"}, ""},
		{"ps", map[string]string{"local_agg": "2"}, ""},
	} {
		a, ok := ForRecord(tc.strategy, tc.opts)
		if got := map[bool]string{true: a.Name}[ok]; got != tc.want {
			t.Errorf("ForRecord(%s, %v) = %q, want %q", tc.strategy, tc.opts, got, tc.want)
		}
	}
}
