package ring_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden schedules in testdata/")

// TestScheduleAllReduce runs the ring allreduce over a recording transport
// and compares the messages it sends, step by step, with
// testdata/allreduce-<algo>-np4.txt, so that a change to an algorithm shows
// as a readable diff. Regenerate with
//
//	go test ./strategies/ring/ -run Schedule -update
//
// The recording is deterministic; collectivetest.ScheduleWorld describes its
// model. Every element carries its own index plus one on every rank and the
// operation is max, so every partial result does too, and the recorder can
// tell from a message's bytes which elements it carries: x[a:b].
func TestScheduleAllReduce(t *testing.T) {
	const n, count = 4, 8
	for _, algo := range []string{"rsag", "whole"} {
		t.Run(algo, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := collectivetest.NewScheduleWorld(n)
				sched := w.RecordMax(t, w.Comms(t, "ring", map[string]string{"algo": algo}), count, -1)
				got := fmt.Sprintf("# ring allreduce (max), algo=%s, np=%d, %d float32 elements (%d B), default chunk\n", algo, n, count, 4*count) + sched
				golden.Check(t, filepath.Join("testdata", "allreduce-"+algo+"-np4.txt"), []byte(got), *update)
			})
		})
	}
}
