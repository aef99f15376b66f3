package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer a process writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stoppedRankBound is how long after a rank is stopped every other rank
// has ended at the latest, beyond the operation timeout: the wait
// diagnosis (1s for the rank that does not answer), the goodbyes of a
// failed job and rank 0's store drain (transport.FailedCloseTimeout and
// rendezvous.FailedDrain, 250ms each, the drain beside the goodbyes).
const stoppedRankBound = 2 * time.Second

// busySlack is what a test allows beyond a bound for a machine ten times
// slower than usual: far less than the minute rank 0 once spent waiting
// for the stopped rank to leave its store.
const busySlack = 15 * time.Second

// TestStoppedRankEndsEveryEnvRank stops (SIGSTOP) one of 4 ranks started
// as torchrun and mpirun start them (--launcher env, rank 0 hosting the
// store) mid-run: every other rank ends on its own, rank 0 with its table
// marked incomplete, each naming the stopped rank, within the operation
// timeout plus stoppedRankBound of the stop (less busySlack). Before, rank
// 0 kept serving its store until the stopped rank left it: a minute.
func TestStoppedRankEndsEveryEnvRank(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const np, stopped = 4, 2
	const timeout = 5 * time.Second
	conventions := []struct{ name, rank, size string }{
		{"torchrun", "RANK", "WORLD_SIZE"},
		{"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	}
	for _, conv := range conventions {
		t.Run(conv.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(l.Addr().String())
			l.Close()
			base := append(strangerEnv(), envArgv+"=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, testTokenEnv,
				conv.size+"="+strconv.Itoa(np))
			type rank struct {
				cmd    *exec.Cmd
				stdout syncBuffer
				stderr syncBuffer
				ended  chan time.Time
			}
			ranks := make([]*rank, np)
			for r := range ranks {
				rk := &rank{ended: make(chan time.Time, 1)}
				// 4KiB's row comes in seconds; 4MiB's iterations take
				// minutes, and the stop lands in them.
				rk.cmd = exec.Command(os.Args[0], "run", "--launcher", "env", "-b", "4KiB", "-e", "4MiB", "-f", "1024",
					"-n", "20000", "-w", "1", "--timeout", timeout.String())
				rk.cmd.Env = append(slices.Clip(base), conv.rank+"="+strconv.Itoa(r))
				rk.cmd.Stdout, rk.cmd.Stderr = &rk.stdout, &rk.stderr
				if err := rk.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() {
					rk.cmd.Wait()
					rk.ended <- time.Now()
				}()
				ranks[r] = rk
			}
			defer func() {
				for _, rk := range ranks {
					rk.cmd.Process.Kill()
				}
			}()
			// Stop it once the ranks are measuring: rank 0 has printed a row.
			deadline := time.Now().Add(2 * time.Minute)
			for !strings.Contains(ranks[0].stdout.String(), " 4096 ") {
				if time.Now().After(deadline) {
					t.Fatalf("no row from rank 0 in 2 minutes:\n%s", ranks[0].stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := syscall.Kill(ranks[stopped].cmd.Process.Pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stop := time.Now()
			for r, rk := range ranks {
				if r == stopped {
					continue
				}
				select {
				case end := <-rk.ended:
					if took := end.Sub(stop); took > timeout+stoppedRankBound+busySlack {
						t.Errorf("rank %d ended %v after the stop; want within the %v timeout and %v", r, took.Round(time.Millisecond), timeout, stoppedRankBound)
					} else {
						t.Logf("rank %d ended %v after the stop", r, took.Round(time.Millisecond))
					}
				case <-time.After(timeout + time.Minute):
					t.Fatalf("rank %d still running %v after the stop:\n%s", r, timeout+time.Minute, rk.stderr.String())
				}
				if code := rk.cmd.ProcessState.ExitCode(); code != 1 {
					t.Errorf("rank %d: exit %d, want 1", r, code)
				}
				if !strings.Contains(rk.stderr.String(), "rank 2 (127.0.0.1:") {
					t.Errorf("rank %d does not name the stopped rank 2 with its address:\n%s", r, rk.stderr.String())
				}
			}
			if !strings.Contains(ranks[0].stdout.String(), "# incomplete: the run failed") {
				t.Errorf("rank 0's table is not marked incomplete:\n%s", ranks[0].stdout.String())
			}
		})
	}
}

// TestStoppedRankEndsMpirunJob stops (SIGSTOP) one of 4 ranks that Open
// MPI's real mpirun started (`run --launcher mpirun`, distbench building
// the line): every rank and mpirun itself end within the operation timeout
// plus stoppedRankBound of the stop (less busySlack). The survivors end on
// their own; the first to exit with an error makes mpirun abort the job,
// and Open MPI's abort (SIGCONT, then SIGTERM and SIGKILL, each
// odls_base_sigkill_timeout apart) blocks mpirun, its forwarding of the
// ranks' output included, for twice that timeout. The engine once set it
// to 30s: mpirun ended a minute after the survivors' diagnosis.
func TestStoppedRankEndsMpirunJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found (Debian: apt-get install openmpi-bin; .ci/run installs it)")
	}
	const np, stopped = 4, 2
	const timeout = 5 * time.Second
	t.Setenv(envArgv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		// 4KiB's row comes in seconds; 4MiB's iterations take minutes,
		// and the stop lands in them.
		done <- run(ctx, &stdout, &stderr, []string{"run", "--launcher", "mpirun", "--np", strconv.Itoa(np),
			"-b", "4KiB", "-e", "4MiB", "-f", "1024", "-n", "20000", "-w", "1", "--timeout", timeout.String()})
	}()
	// Rank 0 prints every rank's pid, then the rows.
	pids := make([]int, np)
	for {
		out := stdout.String()
		if regexp.MustCompile(` 4096 +1024 +float`).MatchString(out) {
			for r := range pids {
				m := regexp.MustCompile(`Rank +` + strconv.Itoa(r) + ` Group +\d+ Pid +(\d+) `).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("rank %d's pid is not in rank 0's header:\n%s", r, out)
				}
				pids[r], _ = strconv.Atoi(m[1])
			}
			break
		}
		select {
		case code := <-done:
			t.Fatalf("ended (exit %d) before any row:\n%s\n%s", code, out, stderr.String())
		case <-ctx.Done():
			t.Fatalf("no row in 4 minutes:\n%s\n%s", out, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	if err := syscall.Kill(pids[stopped], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stop := time.Now()
	limit := timeout + stoppedRankBound + busySlack
	select {
	case code := <-done:
		took := time.Since(stop)
		if took > limit {
			t.Errorf("mpirun ended %v after the stop; want within the %v timeout and %v", took.Round(time.Millisecond), timeout, stoppedRankBound)
		} else {
			t.Logf("mpirun ended %v after the stop", took.Round(time.Millisecond))
		}
		if code == 0 {
			t.Errorf("exit 0 with a rank stopped")
		}
	case <-time.After(timeout + 2*time.Minute):
		t.Fatalf("mpirun still running %v after the stop:\n%s", timeout+2*time.Minute, stderr.String())
	}
	// Each rank, the stopped one included, has exited by now or soon (a
	// zombie nobody reaps, mpirun gone, has exited).
	for r, pid := range pids {
		for running(pid) && time.Since(stop) < limit {
			time.Sleep(50 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("rank %d (pid %d) still there %v after the stop", r, pid, time.Since(stop).Round(time.Millisecond))
		}
	}
	if !strings.Contains(stderr.String(), "rank 2 (") {
		t.Errorf("no rank names the stopped rank 2:\n%s", stderr.String())
	}
}

// running is whether process pid exists and has not exited (a zombie has).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
