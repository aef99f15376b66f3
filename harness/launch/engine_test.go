package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEngineCommand(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		name    string
		e       Engine
		want    string // the line, with the root-only flag removed
		wantEnv []string
		err     string
	}{
		{"mpirun picks the rendezvous", Engine{Name: "mpirun", NP: 1, Self: "/bin/distbench", Args: []string{"run", "--launcher=env"},
			Getenv: env(map[string]string{"MASTER_PORT": "29500"})},
			"mpirun -n 1 -x DISTBENCH_TOKEN -x MASTER_PORT -x MASTER_ADDR /bin/distbench run --launcher=env", []string{"MASTER_ADDR="}, ""},
		{"mpirun keeps the user's", Engine{Name: "mpirun", NP: 1, Self: "d", Extra: []string{"--hostfile", "h"},
			Getenv: env(map[string]string{"MASTER_ADDR": "node7", "MASTER_PORT": "1234"})},
			"mpirun -n 1 -x DISTBENCH_TOKEN -x MASTER_PORT -x MASTER_ADDR --hostfile h d", nil, ""},
		{"mpirun oversubscribes this host alone", Engine{Name: "mpirun", NP: 100000, Self: "d", Getenv: env(map[string]string{"MASTER_PORT": "1"})},
			"mpirun -n 100000 --oversubscribe -x DISTBENCH_TOKEN -x MASTER_PORT -x MASTER_ADDR d", nil, ""},
		{"not inside an allocation", Engine{Name: "mpirun", NP: 100000, Self: "d", Getenv: env(map[string]string{"MASTER_PORT": "1", "SLURM_JOB_ID": "7"})},
			"mpirun -n 100000 -x DISTBENCH_TOKEN -x MASTER_PORT -x MASTER_ADDR d", nil, ""},
		{"MPICH's Hydra exports with -genvlist, oversubscribes freely", Engine{Name: "mpirun", MPI: MPICH, NP: 100000, Self: "d",
			Extra: []string{"-f", "hosts"}, Getenv: env(map[string]string{"MASTER_PORT": "1"})},
			"mpirun -n 100000 -genvlist DISTBENCH_TOKEN,MASTER_PORT,MASTER_ADDR -f hosts d", nil, ""},
		{"srun leaves the address to Slurm's node list", Engine{Name: "srun", NP: 8, Self: "d", Args: []string{"run"}, Getenv: env(nil)},
			"srun -n 8 --export=ALL,DISTBENCH_TOKEN,MASTER_PORT d run", []string{"MASTER_PORT="}, ""},
		{"srun exports a given address", Engine{Name: "srun", NP: 2, Self: "d", Getenv: env(map[string]string{"MASTER_ADDR": "n0", "MASTER_PORT": "5"})},
			"srun -n 2 --export=ALL,DISTBENCH_TOKEN,MASTER_PORT,MASTER_ADDR d", nil, ""},
		{"unknown engine", Engine{Name: "qsub", NP: 2}, "", nil, `unknown engine "qsub" (accepted: mpirun, srun)`},
		{"no ranks", Engine{Name: "srun", NP: 0}, "", nil, "srun: --np 0: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, env, err := tt.e.Command()
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			line := strings.Join(slices.DeleteFunc(argv, func(a string) bool { return a == "--allow-run-as-root" }), " ")
			if line != tt.want {
				t.Errorf("line\n %s\nwant\n %s", line, tt.want)
			}
			if !strings.HasPrefix(env[0], EnvToken+"=") || len(env[0]) != len(EnvToken)+1+64 {
				t.Errorf("env %q: want a fresh 32-byte hex token first", env)
			}
			if strings.Contains(line, env[0][len(EnvToken)+1:]) {
				t.Error("the token is on the printed line")
			}
			for _, prefix := range tt.wantEnv {
				if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, prefix) }) {
					t.Errorf("env %q lacks %s", env, prefix)
				}
			}
		})
	}
}

func TestMPIFlavor(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, version string
		want          MPIFlavor
	}{
		{"openmpi", "mpirun (Open MPI) 4.1.4", OpenMPI},
		{"mpich", "HYDRA build details:\n    Version: 4.0.2", MPICH},
		{"silent", "", OpenMPI},
	} {
		path := filepath.Join(dir, tt.name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho '"+tt.version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := mpiFlavor(t.Context(), path); got != tt.want {
			t.Errorf("%s: flavor %d, want %d", tt.name, got, tt.want)
		}
	}
}
