package harness

import (
	"context"
	"testing"

	"github.com/distbench/distbench/results"
)

// TestSweepStampsWorkload checks that a gradients block's points are
// recorded with the workload they replay, whether a worker measured them
// (the worker's record knows nothing of the plan) or the sweep wrote them
// itself (skipped), while a plain point stays plain and every point keeps
// the id the plan gave it.
func TestSweepStampsWorkload(t *testing.T) {
	dir := t.TempDir()
	o := sweepOpts(t, dir, `
iters: 3
warmup: 0
timeout: 20s
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB]
gradients:
  - model: mlp
    strategies: [ring, testunavailable]
    np: [2]
`)
	planned := map[string]string{} // point id → workload
	for _, g := range o.Plan.Groups {
		for _, p := range g.Points {
			planned[p.ID] = p.Record.Workload
		}
	}
	res, err := Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Measured != 2 || res.Skipped != 1 {
		t.Fatalf("result %+v; want 2 measured (ring 4KiB and its bucket), 1 skipped", res)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Records) != 3 {
		t.Fatalf("%d records, want 3", len(run.Records))
	}
	for _, r := range run.Records {
		want, ok := planned[r.Point]
		switch {
		case !ok:
			t.Errorf("record of unplanned point %q", r.Point)
		case r.Bytes == 4096 && r.Workload != "":
			t.Errorf("%s: plain point has workload %q", r.Point, r.Workload)
		case r.Bytes != 4096 && r.Workload != "mlp DDP bucket":
			t.Errorf("%s (%s): workload %q, want %q", r.Point, r.Strategy, r.Workload, "mlp DDP bucket")
		case r.Workload != want:
			t.Errorf("%s: workload %q, planned %q", r.Point, r.Workload, want)
		}
	}
}
