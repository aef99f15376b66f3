package model

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	_ "github.com/distbench/distbench/strategies/ring"
	_ "github.com/distbench/distbench/strategies/tree"
)

// record runs strategy's allreduce (max) of count float32s on n ranks over
// collectivetest's recording transport and returns the messages it sent.
func record(t *testing.T, strategy string, opts map[string]string, n, count int) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		w := collectivetest.NewScheduleWorld(n)
		comms := make([]collective.Comm, n)
		tensors := make([]collective.Tensor, n)
		for r := range n {
			c, err := collective.New(t.Context(), strategy, collective.Config{Rank: r, Size: n, Transport: w.Transport(r), Options: opts})
			if err != nil {
				t.Fatal(err)
			}
			comms[r] = c
			tensors[r] = collective.NewTensor(collective.Float32, count)
			x := tensors[r].Float32s()
			for i := range x {
				x[i] = float32(i + 1)
			}
		}
		w.Run(t, comms, func(r int, c collective.Comm) error {
			return c.AllReduce(t.Context(), tensors[r], collective.Max)
		})
		out = w.Format()
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
	}
	var cases []tc
	for _, n := range []int{2, 3, 4, 5, 7, 8} {
		for _, count := range []int{8, 13, 101, 257} {
			for _, chunk := range []int{0, 64, 96} {
				opt := map[string]string{"algo": "rsag"}
				if chunk > 0 {
					opt["chunk"] = strconv.Itoa(chunk)
				}
				cases = append(cases, tc{"ring", opt, n, count, func(n int, b int64) Program { return RingRSAG(n, b, 4, chunk) }})
			}
			cases = append(cases, tc{"ring", map[string]string{"algo": "whole"}, n, count, func(n int, b int64) Program { return RingWhole(n, b) }})
		}
	}
	for _, n := range []int{2, 3, 4, 5, 7, 8} {
		for _, count := range []int{8, 13, 101, 600} {
			cases = append(cases,
				tc{"tree", map[string]string{"algo": "dbtree", "chunk": "64"}, n, count, func(n int, b int64) Program { return DoubleTree(n, b, 4, 64) }},
				tc{"tree", map[string]string{"algo": "rd"}, n, count, func(n int, b int64) Program { return RecursiveDoubling(n, b) }})
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s-%v-np%d-%d", c.strategy, c.opts, c.n, c.count)
		t.Run(strings.NewReplacer(" ", "_", ":", "=").Replace(name), func(t *testing.T) {
			want := record(t, c.strategy, c.opts, c.n, c.count)
			got := lockstep(c.prog(c.n, int64(4*c.count)), 4)
			if got != want {
				t.Errorf("generated schedule differs from the strategy's\n--- strategy\n%s--- model\n%s", want, got)
			}
		})
	}
}
