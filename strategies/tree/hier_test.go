package tree

import (
	"fmt"
	"strings"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/transport"
)

// hierWorld is memWorld with rank r on host hosts(r).
func hierWorld(t testing.TB, n int, hosts func(r int) string, opts map[string]string) []collective.Comm {
	names := make([]string, n)
	for r := range names {
		names[r] = hosts(r)
	}
	return collectivetest.MemWorld(t, Name, n, opts, transport.MemOptions{MaxDelay: 20_000, Seed: 11 * uint64(n), Hosts: names})
}

// algo=hier with the tree's algorithms across hosts passes the short suite
// at every world size from 1 to 8: hosts of two ranks (the last alone at
// odd sizes), and one host of three beside hosts of one. core.Hierarchy's
// own layouts are tested with the ring (strategies/ring/hier_test.go).
func TestConformanceHier(t *testing.T) {
	for _, tc := range []struct {
		name, inter string
		host        func(r int) string
	}{
		{"pairs", "dbtree", func(r int) string { return fmt.Sprint("h", r/2) }},
		{"3+1s", "rd", func(r int) string { return fmt.Sprint("h", max(0, r-2)) }},
	} {
		t.Run(tc.name+"/"+tc.inter, func(t *testing.T) {
			collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
				return hierWorld(t, n, tc.host, map[string]string{"algo": "hier", "inter": tc.inter, "chunk": "4KiB"})
			}, collectivetest.Options{WorldSizes: []int{1, 2, 3, 4, 5, 6, 7, 8}, Short: true})
		})
	}
}

func TestHierOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"algo": "hier"}, ""},
		{map[string]string{"algo": "hier", "inter": "rd"}, ""},
		{map[string]string{"algo": "hier", "inter": "hier"}, "accepted: auto, dbtree, rd"},
		{map[string]string{"algo": "dbtree", "inter": "rd"}, "only to algo=hier"},
	} {
		_, err := collective.New(t.Context(), Name, collective.Config{Rank: 0, Size: 1, Options: tc.opts})
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("options %v: err = %v, want %q", tc.opts, err, tc.want)
		}
	}
}
