package launch

import (
	"strings"
	"testing"
)

func TestEngineWorldSize(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		np       int
		explicit bool
		want     int
		err      string
	}{
		{"Open MPI, --np left out", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4"}, 2, false, 4, ""},
		{"Open MPI, --np agrees", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4"}, 4, true, 4, ""},
		{"Open MPI, --np disagrees", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4"}, 2, true, 0,
			"--np 2, but mpirun started 4 ranks: under --launcher env the world size is the launcher's; leave --np out or give --np 4"},
		{"torchrun", map[string]string{"RANK": "0", "WORLD_SIZE": "8"}, 2, false, 8, ""},
		{"MPICH", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "3"}, 2, false, 3, ""},
		{"srun, old name", map[string]string{"SLURM_PROCID": "0", "SLURM_NPROCS": "5"}, 2, false, 5, ""},
		{"no launcher", map[string]string{}, 2, false, 0, "no rank in the environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EngineWorldSize(func(k string) string { return tt.env[k] }, tt.np, tt.explicit)
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

func TestListenHost(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvListenHost: "10.0.0.7", "MASTER_ADDR": "10.0.0.1"}, "10.0.0.7"},
		{map[string]string{}, "127.0.0.1"},
		{map[string]string{"MASTER_ADDR": "localhost"}, "127.0.0.1"},
		{map[string]string{"MASTER_ADDR": "127.0.0.1"}, "127.0.0.1"},
		{map[string]string{"MASTER_ADDR": "::1"}, "127.0.0.1"},
		// A name that does not resolve: loopback, and the join then
		// says what is wrong with MASTER_ADDR.
		{map[string]string{"MASTER_ADDR": "no-such-host.invalid"}, "127.0.0.1"},
	}
	for _, tt := range tests {
		if got := ListenHost(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.env, got, tt.want)
		}
	}
}
