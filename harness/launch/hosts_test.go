package launch

import (
	"slices"
	"testing"

	"github.com/distbench/distbench/harness/job"
)

// Simulated hosts give each host's ranks one host identity of their own,
// and their places within it.
func TestSimulatedHosts(t *testing.T) {
	env, err := simulatedHosts(&job.Spec{NP: 4, Hosts: "3,1"}, "j")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"DISTBENCH_HOST_ID=j/host0", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=3"},
		{"DISTBENCH_HOST_ID=j/host0", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=3"},
		{"DISTBENCH_HOST_ID=j/host0", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=3"},
		{"DISTBENCH_HOST_ID=j/host1", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1"},
	}
	for r, w := range want {
		if got := env(r); !slices.Equal(got, w) {
			t.Errorf("rank %d: %v, want %v", r, got, w)
		}
	}
	env, _ = simulatedHosts(&job.Spec{NP: 2}, "j")
	if got := env(1); !slices.Equal(got, []string{"LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2"}) {
		t.Errorf("no layout: rank 1: %v", got)
	}
}
