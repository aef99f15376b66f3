package tree

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/golden"
	"github.com/distbench/distbench/internal/shapes"
)

var update = flag.Bool("update", false, "rewrite the golden schedules in testdata/")

// The schedule tests run the real algorithms over a recording transport and
// compare the messages they send, step by step, with testdata/*.txt, so that
// a change to an algorithm shows as a readable diff. Regenerate with
//
//	go test ./strategies/tree/ -run Schedule -update
//
// The recording is deterministic; collectivetest.ScheduleWorld describes its
// model. Every element carries its own index plus one on every rank and the
// operation is max, so every partial result does too, and the recorder can
// tell from a message's bytes which elements it carries: x[a:b].

func TestScheduleDoubleTree(t *testing.T) {
	for _, n := range []int{4, 5, 8} {
		checkSchedule(t, fmt.Sprintf("dbtree-allreduce-np%d.txt", n), schedule(t, n, algoDBTree, "allreduce", 12, 0))
	}
}

func TestScheduleRecursiveDoubling(t *testing.T) {
	for _, n := range []int{4, 5, 8} {
		checkSchedule(t, fmt.Sprintf("rd-allreduce-np%d.txt", n), schedule(t, n, algoRD, "allreduce", 4, 0))
	}
}

func TestScheduleBinomialBroadcast(t *testing.T) {
	for _, tc := range []struct{ n, root int }{{4, 0}, {5, 2}, {8, 0}} {
		checkSchedule(t, fmt.Sprintf("binomial-broadcast-np%d-root%d.txt", tc.n, tc.root),
			schedule(t, tc.n, algoAuto, "broadcast", 6, tc.root))
	}
}

// scheduleChunk is the chunk size of the recorded runs: two float32s, so
// that a dozen elements make a pipeline of several chunks.
const scheduleChunk = 8

// schedule runs one operation of count float32 elements on an n-rank world
// over the recording transport and returns its schedule.
func schedule(t *testing.T, n int, a algo, op string, count, root int) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		w := collectivetest.NewScheduleWorld(n)
		comms := make([]collective.Comm, n)
		for r := range n {
			cfg := collective.Config{Rank: r, Size: n, Transport: w.Transport(r)}
			g, err := core.New(Name, cfg, func(*core.Group) (core.Algorithms, error) {
				return &algorithms{algo: a, chunk: scheduleChunk}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			comms[r] = g
		}
		if op == "allreduce" {
			root = -1
		}
		sched := w.RecordMax(t, comms, count, root)
		var b strings.Builder
		switch {
		case op == "broadcast":
			fmt.Fprintf(&b, "# tree binomial broadcast from root %d", root)
		default:
			fmt.Fprintf(&b, "# tree algo=%s allreduce (max)", a)
		}
		fmt.Fprintf(&b, ", np=%d, %d float32 elements (%d B), chunk %d B\n", n, count, 4*count, scheduleChunk)
		switch {
		case op == "broadcast":
			fmt.Fprintf(&b, "# tree: %s\n", topology(n, func(r int) node { return shapes.Binomial(n, root, r) }))
		case a == algoDBTree:
			for i := range 2 {
				lo, hi := core.Block(count, 2, i)
				fmt.Fprintf(&b, "# tree %d (ch%d, x[%d:%d]): %s\n", i, i, lo, hi,
					topology(n, func(r int) node { return shapes.DoubleTree(n, r)[i] }))
			}
		}
		out = b.String() + sched
	})
	return out
}

// topology writes a tree as "parent -> children" for every interior rank.
func topology(n int, place func(r int) node) string {
	var parts []string
	for r := range n {
		if nd := place(r); len(nd.Children) > 0 {
			parts = append(parts, fmt.Sprintf("%d -> %s", r, strings.Trim(fmt.Sprint(nd.Children), "[]")))
		}
	}
	return strings.Join(parts, "; ")
}

// checkSchedule compares got with testdata/name, or rewrites it under -update.
func checkSchedule(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), []byte(got), *update)
}
