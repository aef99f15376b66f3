package rendezvous

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// helperEnv selects helper mode: the test binary, re-executed, acts as one
// rank of a job instead of running tests.
const helperEnv = "DISTBENCH_RENDEZVOUS_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

// helperMain joins the job the environment describes, exchanges pids and a
// sum through the store, and prints what it saw.
func helperMain() int {
	ctx := context.Background()
	s, err := Join(ctx, Options{
		URL:      os.Getenv("HELPER_URL"),
		Rank:     -1,
		Size:     -1,
		Timeout:  20 * time.Second,
		JobID:    os.Getenv("HELPER_JOB"),
		External: os.Getenv("HELPER_EXTERNAL") == "1",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	err = func() error {
		st, rank, size := s.Store(), s.Rank(), s.Size()
		if err := st.Set(ctx, fmt.Sprintf("pid/%d", rank), []byte(strconv.Itoa(os.Getpid()))); err != nil {
			return err
		}
		if _, err := st.Add(ctx, "sum", int64(rank+1)); err != nil {
			return err
		}
		var pids []string
		for r := range size {
			v, err := st.Get(ctx, fmt.Sprintf("pid/%d", r))
			if err != nil {
				return err
			}
			pids = append(pids, string(v))
		}
		// A barrier, so that every Add is in before the sum is read.
		n, err := st.Add(ctx, "done", 1)
		if err != nil {
			return err
		}
		if n == int64(size) {
			if err := st.Set(ctx, "all-done", nil); err != nil {
				return err
			}
		}
		if err := st.Wait(ctx, "all-done"); err != nil {
			return err
		}
		sum, err := st.Get(ctx, "sum")
		if err != nil {
			return err
		}
		fmt.Printf("rank=%d size=%d local=%d sum=%s pids=%s\n", rank, size, s.LocalRank(), sum, strings.Join(pids, ","))
		return nil
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	err            error
}

// runRanks starts one process per env (rank 0's last, after a pause, so
// the others must retry their dials) and waits for all of them.
func runRanks(t *testing.T, envs []map[string]string) []*proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		for _, l := range launchers {
			if name == l.rank || name == l.size || name == l.local || name == l.sizeAlt {
				return true
			}
		}
		return strings.HasPrefix(name, "MASTER_") || strings.HasPrefix(name, "TORCHELASTIC_") || strings.HasPrefix(name, "HELPER_")
	})
	procs := make([]*proc, len(envs))
	var wg sync.WaitGroup
	for i := len(envs) - 1; i >= 0; i-- {
		p := &proc{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^$")}
		p.cmd.Env = append(slices.Clone(base), helperEnv+"=1")
		for k, v := range envs[i] {
			p.cmd.Env = append(p.cmd.Env, k+"="+v)
		}
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if i == 0 {
			time.Sleep(200 * time.Millisecond)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
		wg.Go(func() { p.err = p.cmd.Wait() })
	}
	wg.Wait()
	return procs
}

func TestJoinAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const n = 3
	tests := []struct {
		name string
		envs func(t *testing.T) []map[string]string
	}{
		{"env, torchrun variables, rank 0 hosts", func(t *testing.T) []map[string]string {
			host, port, _ := net.SplitHostPort(freePort(t))
			var envs []map[string]string
			for r := range n {
				envs = append(envs, map[string]string{
					"HELPER_URL": "env://", "HELPER_JOB": "proc-test",
					"RANK": strconv.Itoa(r), "WORLD_SIZE": strconv.Itoa(n), "LOCAL_RANK": strconv.Itoa(r),
					"MASTER_ADDR": host, "MASTER_PORT": port,
				})
			}
			return envs
		}},
		{"tcp, launcher hosts, Open MPI variables", func(t *testing.T) []map[string]string {
			addr := launcherStore(t, "proc-test")
			var envs []map[string]string
			for r := range n {
				envs = append(envs, map[string]string{
					"HELPER_URL": "tcp://" + addr, "HELPER_JOB": "proc-test", "HELPER_EXTERNAL": "1",
					"OMPI_COMM_WORLD_RANK": strconv.Itoa(r), "OMPI_COMM_WORLD_SIZE": strconv.Itoa(n),
					"OMPI_COMM_WORLD_LOCAL_RANK": strconv.Itoa(r),
				})
			}
			return envs
		}},
		{"file, Slurm variables", func(t *testing.T) []map[string]string {
			url := "file://" + filepath.Join(t.TempDir(), "job.store")
			var envs []map[string]string
			for r := range n {
				envs = append(envs, map[string]string{
					"HELPER_URL": url, "SLURM_PROCID": strconv.Itoa(r), "SLURM_NTASKS": strconv.Itoa(n), "SLURM_LOCALID": strconv.Itoa(r),
				})
			}
			return envs
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			procs := runRanks(t, tt.envs(t))
			var pids []string
			for _, p := range procs {
				pids = append(pids, strconv.Itoa(p.cmd.Process.Pid))
			}
			for r, p := range procs {
				if p.err != nil {
					t.Fatalf("rank %d: %v\n%s", r, p.err, p.stderr.String())
				}
				want := fmt.Sprintf("rank=%d size=%d local=%d sum=%d pids=%s\n", r, n, r, n*(n+1)/2, strings.Join(pids, ","))
				if got := p.stdout.String(); got != want {
					t.Fatalf("rank %d printed\n%q, want\n%q\nstderr: %s", r, got, want, p.stderr.String())
				}
			}
		})
	}
}

func TestDuplicateRankAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	addr := freePort(t)
	// Two processes claim rank 1; rank 2 never comes.
	var envs []map[string]string
	for _, r := range []int{0, 1, 1} {
		envs = append(envs, map[string]string{
			"HELPER_URL": "tcp://" + addr, "RANK": strconv.Itoa(r), "WORLD_SIZE": "3",
		})
	}
	start := time.Now()
	procs := runRanks(t, envs)
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("took %v: the duplicate was not refused at once", d)
	}
	host, _ := os.Hostname()
	a := fmt.Sprintf("%s/pid %d", host, procs[1].cmd.Process.Pid)
	b := fmt.Sprintf("%s/pid %d", host, procs[2].cmd.Process.Pid)
	for i, p := range procs {
		if p.err == nil {
			t.Fatalf("process %d joined", i)
		}
		msg := p.stderr.String()
		if !strings.Contains(msg, "rank 1 claimed by "+a+" and "+b) && !strings.Contains(msg, "rank 1 claimed by "+b+" and "+a) {
			t.Fatalf("process %d: %s\nwant it to name %q and %q", i, msg, a, b)
		}
	}
}
