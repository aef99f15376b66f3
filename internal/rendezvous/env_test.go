package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
)

func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want EnvInfo
	}{
		{"torchrun", map[string]string{
			"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
			"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
		}, EnvInfo{Launcher: "torchrun", Rank: 3, Size: 8, LocalRank: 1, MasterAddr: "10.0.0.1", MasterPort: 29500}},
		{"torchrun with agent store", map[string]string{
			"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "node1", "MASTER_PORT": "1234",
			"TORCHELASTIC_USE_AGENT_STORE": "True",
		}, EnvInfo{Launcher: "torchrun", Rank: 0, Size: 2, LocalRank: 0, MasterAddr: "node1", MasterPort: 1234, AgentStore: true}},
		{"torchrun without local rank", map[string]string{"RANK": "1", "WORLD_SIZE": "2"},
			EnvInfo{Launcher: "torchrun", Rank: 1, Size: 2, LocalRank: -1}},
		{"spaces are forgiven", map[string]string{"RANK": " 1", "WORLD_SIZE": "2\n"},
			EnvInfo{Launcher: "torchrun", Rank: 1, Size: 2, LocalRank: -1}},
		{"open mpi", map[string]string{
			"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6", "OMPI_COMM_WORLD_LOCAL_RANK": "2",
		}, EnvInfo{Launcher: "mpirun", Rank: 5, Size: 6, LocalRank: 2}},
		{"mpich", map[string]string{"PMI_RANK": "1", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1"},
			EnvInfo{Launcher: "mpiexec", Rank: 1, Size: 4, LocalRank: 1}},
		{"slurm", map[string]string{
			"SLURM_PROCID": "7", "SLURM_NTASKS": "16", "SLURM_LOCALID": "3", "MASTER_ADDR": "n1", "MASTER_PORT": "5000",
		}, EnvInfo{Launcher: "srun", Rank: 7, Size: 16, LocalRank: 3, MasterAddr: "n1", MasterPort: 5000}},
		{"slurm's older size name", map[string]string{"SLURM_PROCID": "0", "SLURM_NPROCS": "2"},
			EnvInfo{Launcher: "srun", Rank: 0, Size: 2, LocalRank: -1}},
		{"torchrun inside srun wins", map[string]string{
			"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0",
			"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": "0",
		}, EnvInfo{Launcher: "torchrun", Rank: 2, Size: 4, LocalRank: 0}},
		{"mpirun inside an allocation wins over slurm", map[string]string{
			"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "1",
		}, EnvInfo{Launcher: "mpirun", Rank: 1, Size: 2, LocalRank: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(envFunc(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestFromEnvErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string // each must appear in the message
	}{
		{"nothing set", nil, []string{"no rank in the environment", "RANK and WORLD_SIZE (torchrun)",
			"OMPI_COMM_WORLD_RANK", "SLURM_PROCID and SLURM_NTASKS (srun)"}},
		{"rank without size", map[string]string{"RANK": "1"}, []string{"WORLD_SIZE: not set, though RANK is"}},
		{"size without rank", map[string]string{"WORLD_SIZE": "4"}, []string{"RANK: not set, though WORLD_SIZE is"}},
		{"ompi rank without size", map[string]string{"OMPI_COMM_WORLD_RANK": "1"}, []string{"OMPI_COMM_WORLD_SIZE: not set"}},
		{"slurm size without rank", map[string]string{"SLURM_NTASKS": "4"}, []string{"SLURM_PROCID: not set"}},
		{"garbled rank", map[string]string{"RANK": "two", "WORLD_SIZE": "4"},
			[]string{`RANK="two": not a rank for WORLD_SIZE=4 (accepted: an integer in 0..3)`}},
		{"rank out of range", map[string]string{"RANK": "4", "WORLD_SIZE": "4"}, []string{`RANK="4"`, "0..3"}},
		{"negative rank", map[string]string{"RANK": "-1", "WORLD_SIZE": "4"}, []string{`RANK="-1"`}},
		{"zero size", map[string]string{"RANK": "0", "WORLD_SIZE": "0"}, []string{`WORLD_SIZE="0": not a world size`}},
		{"garbled size", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4(x2)"}, []string{`SLURM_NTASKS="4(x2)"`}},
		{"garbled local rank", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "gpu0"}, []string{`LOCAL_RANK="gpu0"`}},
		{"garbled port", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "http"},
			[]string{`MASTER_PORT="http": not a TCP port (accepted: an integer in 1..65535)`}},
		{"port out of range", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "70000"}, []string{`MASTER_PORT="70000"`}},
		{"garbled agent store", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_USE_AGENT_STORE": "yes please"},
			[]string{`TORCHELASTIC_USE_AGENT_STORE="yes please": not a boolean`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromEnv(envFunc(tt.env))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to contain %q", err, w)
				}
			}
			var ee *EnvError
			if !errors.As(err, &ee) || !errors.Is(err, collective.ErrInvalid) {
				t.Errorf("err = %#v, want an *EnvError matching ErrInvalid", err)
			}
		})
	}
}

// TestResolveMaster: env://'s store address from the engine's facts, and
// the errors that say which variable to pass, and how, where there are none.
func TestResolveMaster(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // "host:port", or "error: " and fragments separated by "|"
	}{
		{"torchrun", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "n1", "MASTER_PORT": "29500"}, "n1:29500"},
		{"srun: the step's first host, a port from the job id", map[string]string{
			"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_STEP_NODELIST": "gpu[07-08],login", "SLURM_JOB_NODELIST": "x[1-9]",
			"SLURM_JOB_ID": "1234567"}, "gpu07:19567"},
		{"srun: the job's host list without a step's", map[string]string{
			"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_NODELIST": "n[1-2]-ib[3-4]", "SLURM_JOB_ID": "5"}, "n1-ib3:15005"},
		{"srun: MASTER_ADDR and MASTER_PORT win", map[string]string{
			"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "5",
			"MASTER_ADDR": "head", "MASTER_PORT": "1000"}, "head:1000"},
		{"srun: a garbled host list", map[string]string{
			"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_STEP_NODELIST": "gpu[a,b]", "SLURM_JOB_ID": "5"},
			`error: SLURM_STEP_NODELIST="gpu[a,b]"|numbers only|export MASTER_ADDR`},
		{"srun: no job id", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_STEP_NODELIST": "n1"},
			"error: MASTER_PORT: not set; srun set neither"},
		{"Open MPI", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4", "SLURM_JOB_NODELIST": "n[1-2]"},
			"error: MASTER_ADDR: not set; Open MPI|mpirun -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500|-x DISTBENCH_INIT=file:///"},
		{"Open MPI with MASTER_ADDR only", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4", "MASTER_ADDR": "h"},
			"error: MASTER_PORT: not set; Open MPI"},
		{"MPICH", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "4"},
			"error: MASTER_ADDR: not set; MPICH|mpiexec -genv MASTER_ADDR $(hostname) -genv MASTER_PORT 29500|-genv DISTBENCH_INIT file:///"},
		{"no launcher", map[string]string{}, "error: MASTER_ADDR: not set; env:// needs MASTER_ADDR and MASTER_PORT|headless Service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get := func(k string) string { return tt.env[k] }
			var info EnvInfo
			err := info.readStoreVars(get)
			if err == nil {
				err = info.resolveMaster(get)
			}
			if frags, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
				if err == nil {
					t.Fatalf("got %s:%d, want an error", info.MasterAddr, info.MasterPort)
				}
				for _, f := range strings.Split(frags, "|") {
					if !strings.Contains(err.Error(), f) {
						t.Errorf("error %q lacks %q", err, f)
					}
				}
				return
			}
			if got := fmt.Sprintf("%s:%d", info.MasterAddr, info.MasterPort); err != nil || got != tt.want {
				t.Fatalf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// TestDialEnv: a strategy's server process reaches torch's agent store
// when TORCHELASTIC_USE_AGENT_STORE says so, and rank 0's distbench store
// otherwise, at the Slurm defaults where MASTER_PORT is unset.
func TestDialEnv(t *testing.T) {
	ctx := context.Background()
	f := newFakeTorch(t, torch2)
	host, port, _ := net.SplitHostPort(f.addr())
	st, err := DialEnv(ctx, envFunc(map[string]string{
		"MASTER_ADDR": host, "MASTER_PORT": port, "TORCHELASTIC_USE_AGENT_STORE": "True",
		"TORCHELASTIC_RUN_ID": "r1", "TORCHELASTIC_RESTART_COUNT": "2",
	}), ClientOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*TorchStore); !ok {
		t.Fatalf("got a %T, want a *TorchStore", st)
	}
	if err := st.Set(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// torch's SET has no answer: a get, which waits for the key, makes
	// sure the server has stored it before the test looks.
	if _, err := st.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	f.mu.Lock()
	_, ok := f.kv["/distbench/r1/restart-2/k"]
	f.mu.Unlock()
	if !ok {
		t.Fatal("the key is not under the run's and the restart's prefix")
	}

	// A port that SLURM_JOB_ID maps to: find a free one in the range.
	var srv *Server
	var jobID int
	for id := 1000; id < 1100 && srv == nil; id++ {
		s, err := Listen(fmt.Sprintf("127.0.0.1:%d", SlurmPortBase+id%10000), ServerOptions{JobID: "j"})
		if err == nil {
			srv, jobID = s, id
		}
	}
	if srv == nil {
		t.Skip("no free port in the Slurm range")
	}
	defer srv.Close()
	st, err = DialEnv(ctx, envFunc(map[string]string{
		"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": "127.0.0.1", "SLURM_JOB_ID": strconv.Itoa(jobID),
	}), ClientOptions{JobID: "j", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*Client); !ok {
		t.Fatalf("got a %T, want a *Client", st)
	}
}
