package reports

import (
	"testing"

	"github.com/distbench/distbench/results"
)

// A point over shared memory is never the same point as over TCP: its
// series has a name of its own, and compare does not match the two.
func TestTransportKeepsPointsApart(t *testing.T) {
	tcp := results.Record{Kind: results.KindCollective, Collective: "allreduce", Strategy: "ring", NP: 2, Bytes: 4096, DType: "float32", Op: "sum"}
	old := tcp
	tcp.Transport = "tcp"
	shm := tcp
	shm.Transport = "shm"
	if PointKey(&tcp) != PointKey(&old) {
		t.Errorf("a tcp record and one from before transports were recorded differ: %q vs %q", PointKey(&tcp), PointKey(&old))
	}
	if PointKey(&tcp) == PointKey(&shm) {
		t.Errorf("tcp and shm share the point key %q", PointKey(&tcp))
	}
	if got := seriesName(&shm); got != "ring/shm" {
		t.Errorf("series %q, want ring/shm", got)
	}
	if got := seriesName(&tcp); got != "ring" {
		t.Errorf("series %q, want ring", got)
	}
	if got := transportsOf([]results.Record{tcp, shm, old}); len(got) != 2 || got[0] != "shm" || got[1] != "tcp" {
		t.Errorf("transports %q, want [shm tcp]", got)
	}
}
