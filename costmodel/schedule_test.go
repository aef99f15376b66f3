package costmodel

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/distbench/distbench/collective/collectivetest"
	_ "github.com/distbench/distbench/strategies/ring"
	_ "github.com/distbench/distbench/strategies/tree"
)

// record runs strategy's allreduce (max) of count float32s on n ranks over
// collectivetest's recording transport and returns the messages it sent.
func record(t *testing.T, strategy string, opts map[string]string, n, count int) string {
	return recordOp(t, strategy, opts, n, count, -1)
}

// recordOp is record, or with root ≥ 0 a broadcast from root.
func recordOp(t *testing.T, strategy string, opts map[string]string, n, count, root int) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		w := collectivetest.NewScheduleWorld(n)
		out = w.RecordMax(t, w.Comms(t, strategy, opts), count, root)
	})
	return out
}

// TestScheduleMatchesStrategies runs the real strategies over the
// recording transport that their schedule goldens use and checks that the
// schedules generated here send the same messages (source, destination,
// channel, elements, bytes) in the same steps: the model's schedules are
// the strategies'.
func TestScheduleMatchesStrategies(t *testing.T) {
	type tc struct {
		strategy string
		opts     map[string]string
		n, count int
		prog     func(n int, bytes int64) Program
		root     int // ≥ 0: a broadcast from root
	}
	var cases []tc
	for _, n := range []int{2, 3, 4, 5, 7, 8} {
		for _, count := range []int{8, 13, 101, 257} {
			for _, chunk := range []int{0, 64, 96} {
				opt := map[string]string{"algo": "rsag"}
				if chunk > 0 {
					opt["chunk"] = strconv.Itoa(chunk)
				}
				cases = append(cases, tc{"ring", opt, n, count, func(n int, b int64) Program { return RingRSAG(n, b, 4, chunk) }, -1})
			}
			cases = append(cases, tc{"ring", map[string]string{"algo": "whole"}, n, count, func(n int, b int64) Program { return RingWhole(n, b) }, -1})
		}
	}
	for _, n := range []int{2, 3, 4, 5, 7, 8} {
		for _, count := range []int{8, 13, 101, 600} {
			cases = append(cases,
				tc{"tree", map[string]string{"algo": "dbtree", "chunk": "64"}, n, count, func(n int, b int64) Program { return DoubleTree(n, b, 4, 64) }, -1},
				tc{"tree", map[string]string{"algo": "rd"}, n, count, func(n int, b int64) Program { return RecursiveDoubling(n, b) }, -1})
		}
	}
	for _, n := range []int{2, 3, 5, 8} {
		for _, count := range []int{8, 101} {
			for _, root := range []int{0, n - 1} {
				cases = append(cases, tc{"ring", map[string]string{"chunk": "64"}, n, count,
					func(n int, b int64) Program { return ChainBroadcast(n, b, 4, 64, root) }, root},
					tc{"tree", map[string]string{"chunk": "64"}, n, count,
						func(n int, b int64) Program { return BinomialBroadcast(n, b, 4, 64, root) }, root})
			}
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s-%v-np%d-%d-root%d", c.strategy, c.opts, c.n, c.count, c.root)
		t.Run(strings.NewReplacer(" ", "_", ":", "=").Replace(name), func(t *testing.T) {
			want := recordOp(t, c.strategy, c.opts, c.n, c.count, c.root)
			got := lockstep(c.prog(c.n, int64(4*c.count)), 4)
			if got != want {
				t.Errorf("generated schedule differs from the strategy's\n--- strategy\n%s--- model\n%s", want, got)
			}
		})
	}
}
