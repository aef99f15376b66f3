package model

import (
	"testing"

	"github.com/distbench/distbench/results"
)

// Points keeps records of messages over sockets only: the same point over
// shared memory or on device buffers is not a point of the network's model.
func TestPointsTransportAndDevice(t *testing.T) {
	rec := func(transport, device string) results.Record {
		return results.Record{Kind: results.KindCollective, Strategy: "ring", Collective: "allreduce",
			NP: 2, Bytes: 1 << 20, TimeUs: 100, Link: "1Gbit,25us", Transport: transport, Device: device}
	}
	tests := []struct {
		name string
		rec  results.Record
		want int
	}{
		{"tcp", rec("tcp", ""), 1},
		{"older record, tcp", rec("", ""), 1},
		{"shared memory", rec("shm", ""), 0},
		{"auto", rec("auto", ""), 0},
		{"device buffers", rec("tcp", "cuda"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(Points([]results.Record{tt.rec}, 2)); got != tt.want {
				t.Errorf("%d points, want %d", got, tt.want)
			}
		})
	}
}
