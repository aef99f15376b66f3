package collectivetest

import (
	"testing"

	"github.com/distbench/distbench/collective"
)

// Comms builds strategy's communicator, with options opts, on every rank of
// w (over w.Transport). Call it inside the synctest bubble that runs them.
func (w *ScheduleWorld) Comms(t testing.TB, strategy string, opts map[string]string) []collective.Comm {
	t.Helper()
	comms := make([]collective.Comm, len(w.ranks))
	for r := range comms {
		c, err := collective.New(t.Context(), strategy, collective.Config{Rank: r, Size: len(comms), Transport: w.Transport(r), Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		comms[r] = c
	}
	return comms
}

// RecordMax runs one operation of count float32 elements on comms (rank
// r's over w.Transport(r)): an allreduce (max) of 1, 2, … on every rank, or
// with root ≥ 0 a broadcast of them from root; checks that every rank ends
// with 1, 2, …; and returns the schedule (Format). With every element its
// own index plus one on every rank and max as the operation, every partial
// result carries it too, so the schedule can say which elements a message
// holds. Call it inside a synctest bubble, with that bubble's t.
func (w *ScheduleWorld) RecordMax(t testing.TB, comms []collective.Comm, count, root int) string {
	t.Helper()
	tensors := make([]collective.Tensor, len(comms))
	for r := range comms {
		tensors[r] = collective.NewTensor(collective.Float32, count)
		if root < 0 || r == root {
			x := tensors[r].Float32s()
			for i := range x {
				x[i] = float32(i + 1)
			}
		}
	}
	w.Run(t, comms, func(r int, c collective.Comm) error {
		if root >= 0 {
			return c.Broadcast(t.Context(), tensors[r], root)
		}
		return c.AllReduce(t.Context(), tensors[r], collective.Max)
	})
	for r := range comms {
		for i, v := range tensors[r].Float32s() {
			if v != float32(i+1) {
				t.Fatalf("rank %d: element %d is %v, want %d", r, i, v, i+1)
			}
		}
	}
	return w.Format()
}
