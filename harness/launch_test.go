package harness

import (
	"slices"
	"testing"
)

func TestWorkerProcs(t *testing.T) {
	for _, tc := range []struct {
		procs, cores int
		maxprocs     int
		spin         bool
	}{
		{procs: 2, cores: 2, maxprocs: 1, spin: true},
		{procs: 4, cores: 2, maxprocs: 1, spin: false},
		{procs: 2, cores: 16, maxprocs: 8, spin: true},
		{procs: 3, cores: 16, maxprocs: 5, spin: true},
		{procs: 1, cores: 1, maxprocs: 1, spin: true},
		{procs: 9, cores: 8, maxprocs: 1, spin: false},
	} {
		maxprocs, spin := workerProcs(tc.procs, tc.cores)
		if maxprocs != tc.maxprocs || (spin > 0) != tc.spin {
			t.Errorf("workerProcs(%d procs, %d cores) = GOMAXPROCS %d, spin %v; want %d, spinning %v",
				tc.procs, tc.cores, maxprocs, spin, tc.maxprocs, tc.spin)
		}
	}
}

func TestBindings(t *testing.T) {
	for _, tc := range []struct {
		procs int
		cpus  []int
		want  []string
	}{
		{2, []int{0, 1}, []string{"0", "1"}},
		{2, []int{0, 1, 2, 3}, []string{"0,1", "2,3"}},
		{3, []int{4, 5, 6, 7, 8, 9, 10}, []string{"4,5", "6,7", "8,9"}},
		{3, []int{0, 1}, nil}, // fewer CPUs than processes: no binding
		{1, nil, nil},
	} {
		if got := bindings(tc.procs, tc.cpus); !slices.Equal(got, tc.want) {
			t.Errorf("bindings(%d, %v) = %q, want %q", tc.procs, tc.cpus, got, tc.want)
		}
	}
}
