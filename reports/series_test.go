package reports

import (
	"testing"

	"github.com/distbench/distbench/results"
)

// TestSeriesNames: the transports of one strategy are series of their own,
// named by it where it is not the default mesh; other options follow.
func TestSeriesNames(t *testing.T) {
	for _, tc := range []struct {
		r            results.Record
		series, base string
	}{
		{results.Record{Strategy: "ring"}, "ring", "ring"},
		{results.Record{Strategy: "ps"}, "ps", "ps"},
		{results.Record{Strategy: "ps", Options: map[string]string{"transport": "mesh"}}, "ps", "ps"},
		{results.Record{Strategy: "ps", Options: map[string]string{"transport": "grpc"}}, "ps/grpc", "ps/grpc"},
		{results.Record{Strategy: "ps", Options: map[string]string{"transport": "grpc", "placement": "dedicated"}}, "ps/grpc placement=dedicated", "ps/grpc"},
		{results.Record{Strategy: "ring", Peer: "mpi"}, "ring mpi (peer)", "mpi"},
	} {
		if got := seriesName(&tc.r); got != tc.series {
			t.Errorf("seriesName(%s %v) = %q, want %q", tc.r.Strategy, tc.r.Options, got, tc.series)
		}
		if got := baseName(&tc.r); got != tc.base {
			t.Errorf("baseName(%s %v) = %q, want %q", tc.r.Strategy, tc.r.Options, got, tc.base)
		}
	}
}
