package harness

import (
	"strings"
	"testing"

	"github.com/distbench/distbench/harness/job"
)

func TestEngineNP(t *testing.T) {
	mpi := func(rank, size string) map[string]string {
		return map[string]string{"OMPI_COMM_WORLD_RANK": rank, "OMPI_COMM_WORLD_SIZE": size}
	}
	dedicated := func(servers string) map[string]string {
		o := map[string]string{"placement": "dedicated"}
		if servers != "" {
			o["servers"] = servers
		}
		return o
	}
	tests := []struct {
		name     string
		env      map[string]string
		strategy string
		opts     map[string]string
		np       int
		explicit bool
		want     int
		err      string
	}{
		{"ring takes the world", mpi("1", "4"), "ring", nil, 2, false, 4, ""},
		{"ring, --np agrees", mpi("1", "4"), "ring", nil, 4, true, 4, ""},
		{"ring, --np disagrees", mpi("1", "4"), "ring", nil, 2, true, 0,
			"--np 2, but mpirun started 4 ranks: under --launcher env the world size is the launcher's; leave --np out or give --np 4"},
		{"colocated ps takes the world", mpi("0", "4"), "ps", nil, 2, false, 4, ""},
		{"2 dedicated servers", mpi("0", "6"), "ps", dedicated("2"), 2, false, 4, ""},
		{"a server per worker", mpi("0", "8"), "ps", dedicated(""), 2, false, 4, ""},
		{"a server per worker, odd world", mpi("0", "5"), "ps", dedicated(""), 2, false, 0,
			"mpirun started 5 ranks, but no number of workers with ps's server processes makes 5"},
		{"dedicated, --np agrees", mpi("0", "8"), "ps", dedicated("4"), 4, true, 4, ""},
		{"dedicated, --np disagrees", mpi("0", "8"), "ps", dedicated("4"), 2, true, 0,
			"--np 2 with ps's 4 server processes needs 6 ranks, but mpirun started 8: start 6, or leave --np out"},
		{"torchrun", map[string]string{"RANK": "0", "WORLD_SIZE": "8"}, "ring", nil, 2, false, 8, ""},
		{"MPICH", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "3"}, "ring", nil, 2, false, 3, ""},
		{"srun, old name", map[string]string{"SLURM_PROCID": "0", "SLURM_NPROCS": "5"}, "ring", nil, 2, false, 5, ""},
		{"unknown strategy", mpi("0", "4"), "nosuch", nil, 2, false, 0, "nosuch"},
		{"no engine", map[string]string{}, "ring", nil, 2, false, 0, "no rank in the environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EngineNP(func(k string) string { return tt.env[k] }, tt.strategy, tt.opts, tt.np, tt.explicit)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %d, %v; want an error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// The engine's ranks after the workers are the servers, in order; without
// servers in the launch, every rank is a worker of the engine's world.
func TestEngineServer(t *testing.T) {
	ps := &job.Spec{Strategy: "ps", NP: 2, Options: map[string]string{"placement": "dedicated", "servers": "2"}}
	ring := &job.Spec{Strategy: "ring", NP: 4}
	tests := []struct {
		name                  string
		spec                  *job.Spec
		rank, size            string
		index, count, workers int
	}{
		{"worker", ps, "1", "4", -1, 2, 2},
		{"first server", ps, "2", "4", 0, 2, 2},
		{"second server", ps, "3", "4", 1, 2, 2},
		{"servers started apart", ps, "1", "2", -1, 0, -1},
		{"no servers", ring, "3", "4", -1, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"OMPI_COMM_WORLD_RANK": tt.rank, "OMPI_COMM_WORLD_SIZE": tt.size}
			index, count, workers, err := engineServer(tt.spec, func(k string) string { return env[k] })
			if err != nil || index != tt.index || count != tt.count || workers != tt.workers {
				t.Fatalf("got index %d, count %d, workers %d, %v; want %d, %d, %d",
					index, count, workers, err, tt.index, tt.count, tt.workers)
			}
		})
	}
}
