package costmodel

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/distbench/distbench/collective/collectivetest"
)

// recordHosts is record on ranks placed on hosts of the given sizes (host
// 0's ranks first), as the recording transport tells the strategies.
func recordHosts(t *testing.T, strategy string, opts map[string]string, hosts []int, count int) string {
	var out string
	n := 0
	var names []string
	for h, k := range hosts {
		n += k
		for range k {
			names = append(names, fmt.Sprintf("host%d", h))
		}
	}
	synctest.Test(t, func(t *testing.T) {
		w := collectivetest.NewScheduleWorld(n)
		w.SetHosts(names)
		out = w.RecordMax(t, w.Comms(t, strategy, opts), count, -1)
	})
	return out
}

// TestHierScheduleMatchesStrategy checks the generated hierarchical
// allreduce against ring's and tree's algo=hier over the recording transport with
// hosts: every message (source, destination, channel, elements, bytes) in
// the same step, at even and uneven layouts, below and above the size
// from which it pipelines in slices and two lanes.
func TestHierScheduleMatchesStrategy(t *testing.T) {
	type tc struct {
		hosts []int
		count int
		opts  map[string]string
		tree  bool
	}
	var cases []tc
	for _, hosts := range [][]int{{2, 2}, {3, 1}, {1, 3}, {2, 2, 2}, {4, 4}, {2, 2, 2, 2}, {3, 2}} {
		for _, count := range []int{8, 13, 101, 1000} {
			cases = append(cases,
				tc{hosts, count, map[string]string{"algo": "hier", "chunk": "64"}, false},
				tc{hosts, count, map[string]string{"algo": "hier", "inter": "whole", "chunk": "96"}, false},
				tc{hosts, count, map[string]string{"algo": "hier", "inter": "rsag", "chunk": "64"}, false},
				tc{hosts, count, map[string]string{"algo": "hier", "inter": "dbtree", "chunk": "64"}, true},
				tc{hosts, count, map[string]string{"algo": "hier", "inter": "rd", "chunk": "96"}, true})
		}
	}
	// From 8 MiB it pipelines: slices of 4 MiB, alternate lanes across
	// hosts (channels moved up by 8), automatic chunks.
	for _, hosts := range [][]int{{2, 2}, {3, 1}, {2, 2, 2}, {4, 4}} {
		for _, mib := range []int{8, 13} {
			cases = append(cases, tc{hosts, mib << 18, map[string]string{"algo": "hier"}, false},
				tc{hosts, mib << 18, map[string]string{"algo": "hier"}, true})
		}
	}
	if testing.Short() {
		cases = cases[:len(cases)-16]
	}
	for _, c := range cases {
		name := fmt.Sprintf("tree=%v-%v-%d-%v", c.tree, c.hosts, c.count, c.opts)
		t.Run(name, func(t *testing.T) {
			strategy, gen := "ring", ringHier
			if c.tree {
				strategy, gen = "tree", treeHier
			}
			want := recordHosts(t, strategy, c.opts, c.hosts, c.count)
			got := lockstep(gen(c.hosts, int64(4*c.count), 4, c.opts), 4)
			if got != want {
				t.Errorf("generated schedule differs from the strategy's\n--- strategy\n%s--- model\n%s", want, got)
			}
		})
	}
}
