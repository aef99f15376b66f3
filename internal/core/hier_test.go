package core

import (
	"slices"
	"testing"

	"github.com/distbench/distbench/collective/driver"
)

// hosted is a transport that only knows its hosts.
type hosted struct {
	driver.Transport
	hosts []string
}

func (h hosted) HostOf(r int) string { return h.hosts[r] }

// A hierarchy exists only where it can gain: more than one host, and a host
// with more than one rank. Shards go to the ranks of each host in
// contiguous runs, the owners of each shard one per host.
func TestHierarchyOf(t *testing.T) {
	all := []int{0, 1, 2, 3}
	for _, hosts := range [][]string{{"a", "a", "a", "a"}, {"a", "b", "c", "d"}, {"a", "a", "", "b"}} {
		if h := hierarchyOf(hosted{hosts: hosts}, all, 0); h != nil {
			t.Errorf("hosts %v: hierarchy %v, want none", hosts, h)
		}
	}
	if h := hierarchyOf(nil, all, 0); h != nil {
		t.Errorf("no topology: hierarchy %v, want none", h)
	}
	// Ranks 1 and 3 of a group whose members are global ranks 4..7; on
	// hosts x (4, 6, 7) and y (5).
	h := hierarchyOf(hosted{hosts: []string{"", "", "", "", "x", "y", "x", "x"}}, []int{4, 5, 6, 7}, 3)
	if h == nil || h.String() != "3+1" || h.host != 0 || h.local != 2 || h.k != 3 {
		t.Fatalf("hierarchy %+v, want 3+1, this rank local 2 of host 0", h)
	}
	for s, want := range [][]int{{0, 1}, {2, 1}, {3, 1}} {
		if got := h.owners(s); !slices.Equal(got, want) {
			t.Errorf("owners of shard %d: %v, want %v", s, got, want)
		}
	}
	if lo, hi := h.shards(1, 0); lo != 0 || hi != 3 {
		t.Errorf("host y's rank owns shards %d..%d, want 0..2", lo, hi-1)
	}
	// 10 elements of 4 bytes in 3 shards: 4, 3, 3.
	for j, want := range [][2]int{{0, 16}, {16, 28}, {28, 40}} {
		if lo, hi := h.region(0, j, 10, 4); lo != want[0] || hi != want[1] {
			t.Errorf("region of host x's rank %d: %d..%d, want %v", j, lo, hi, want)
		}
	}
}
