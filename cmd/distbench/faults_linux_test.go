//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Faults injected for real: worker processes killed with SIGKILL mid-run,
// and the launcher itself killed, with the processes found through /proc.

type cliResult struct {
	code           int
	stdout, stderr string
	ended          time.Time
}

// startCLI runs the CLI in-process, as runCLI does, in the background; the
// channel it returns is closed when it has ended and the result is set.
func startCLI(t *testing.T, args ...string) (*cliResult, <-chan struct{}) {
	res := &cliResult{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		res.code, res.stdout, res.stderr = runCLI(t, args...)
		res.ended = time.Now()
	}()
	t.Cleanup(func() { <-done })
	return res, done
}

// A tree rank killed with SIGKILL mid-run is named, with its address,
// by every surviving rank within a round trip or so, not at the operation's
// deadline (5m here). At np 8 rank 1 is linked to ranks 0, 2 and 3 only
// (a leaf of tree 0, interior in tree 1); ranks 4 to 7 learn of it through
// the aborts of those that are.
func TestRunTreePeerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const np, victim = 8, 1
	res, done := startCLI(t, "run", "--strategy", "tree", "--opt", "algo=dbtree", "--np", strconv.Itoa(np),
		"-b", "16MiB", "-e", "16MiB", "--iters", "100000000", "--warmup", "1", "--timeout", "5m")
	ps := waitForJob(t, os.Getpid(), np, np-1, done, func() string { return res.stderr })
	t.Cleanup(func() { killJob(ps) })
	for _, p := range ps {
		if p.getenv("RANK") == strconv.Itoa(victim) {
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	killed := time.Now()
	<-done
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", res.code, res.stderr)
	}
	// A generous bound for a busy machine; the failure was the launcher
	// killing the survivors, silent, after its 10 s grace.
	if el := res.ended.Sub(killed); el > time.Minute {
		t.Errorf("took %v after the kill to fail", el)
	}
	dead := regexp.MustCompile(fmt.Sprintf(`rank %d \(127\.0\.0\.1:\d+\)`, victim))
	// The kill may land in an allreduce or in a barrier of the harness
	// around the timed ones (before timing, before counting wire bytes):
	// either way the error names the operation and its sequence number.
	namesOp := regexp.MustCompile(`tree: (allreduce|barrier) #\d+`)
	for r := range np {
		if r == victim {
			continue
		}
		line := lastError(res.stderr, fmt.Sprintf("rank %d", r))
		switch {
		case line == "":
			t.Errorf("rank %d reported no error:\n%s", r, res.stderr)
		case !dead.MatchString(line) || !namesOp.MatchString(line):
			t.Errorf("rank %d's error does not name rank %d with its address and the operation: %s", r, victim, line)
		case strings.Contains(line, "timed out"):
			t.Errorf("rank %d waited for its deadline: %s", r, line)
		}
	}
}

// With dedicated parameter servers, a worker that dies ends the job at once:
// the launcher stops the servers, which serve only the failed job, rather
// than wait out its grace period for the other workers, whose operations
// wait on the servers; and its error names the dead worker first.
func TestRunDedicatedServersWorkerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const np, victim = 2, 1
	res, done := startCLI(t, "run", "--strategy", "ps", "--opt", "placement=dedicated", "--np", strconv.Itoa(np),
		"-b", "64KiB", "-e", "64KiB", "--iters", "100000000", "--warmup", "1", "--timeout", "5m")
	// Each worker: its mesh peer and the two servers.
	ps := waitForJob(t, os.Getpid(), 2*np, np+1, done, func() string { return res.stderr })
	t.Cleanup(func() { killJob(ps) })
	for _, p := range ps {
		if p.getenv("RANK") == strconv.Itoa(victim) {
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	killed := time.Now()
	<-done
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", res.code, res.stderr)
	}
	if el := res.ended.Sub(killed); el > time.Minute {
		t.Errorf("took %v after the kill to fail", el)
	}
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, fmt.Sprintf("distbench: rank %d (pid ", victim)) || !strings.Contains(last, "signal: killed") {
		t.Errorf("the launcher's error does not begin with the killed rank %d: %s", victim, last)
	}
	// The other workers failed on their own once the servers were gone,
	// rather than being killed at the end of the grace period.
	if strings.Contains(last, "still running") {
		t.Errorf("the job waited for the launcher's grace period: %s", last)
	}
}

// A launcher killed with SIGKILL, which gives it no chance to stop its
// children, takes them all with it, workers and dedicated servers, and the
// servers' ports close.
func TestLauncherKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tests := []struct {
		name    string
		args    []string
		procs   int // workers and servers
		servers int // of procs, those that listen
		conns   int // established connections a running worker holds besides the store's
	}{
		{"ring", []string{"--strategy", "ring", "--np", "2"}, 2, 0, 1},
		// Over the mesh the servers are ranks of it: the mesh's listeners
		// close once it is built, and nothing else listens.
		{"ps dedicated", []string{"--strategy", "ps", "--opt", "placement=dedicated", "--np", "2"}, 4, 0, 3},
		{"ps dedicated grpc", []string{"--strategy", "ps", "--opt", "placement=dedicated", "--opt", "transport=grpc", "--np", "2"}, 4, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(append(append([]string{"run"}, tt.args...),
				"-b", "64KiB", "-e", "64KiB", "--iters", "100000000", "--warmup", "1", "--timeout", "5m"))
			launcher := exec.Command(os.Args[0])
			launcher.Env = append(os.Environ(), envLaunch+"="+string(args))
			var out bytes.Buffer
			launcher.Stdout, launcher.Stderr = &out, &out
			if err := launcher.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { launcher.Wait(); close(exited) }()
			t.Cleanup(func() { launcher.Process.Kill(); <-exited })
			ps := waitForJob(t, launcher.Process.Pid, tt.procs, tt.conns, exited, out.String)
			t.Cleanup(func() { killJob(ps) })
			var ports []int
			for _, p := range ps {
				for _, s := range p.sockets() {
					if s.listening {
						ports = append(ports, s.local)
					}
				}
			}
			if len(ports) != tt.servers {
				t.Fatalf("found %d listening ports, want one per server (%d)", len(ports), tt.servers)
			}

			launcher.Process.Signal(syscall.SIGKILL)
			<-exited
			// Generous for a busy machine: they used to be alive 90 s later.
			// A killed process's threads and files outlast its main
			// thread's exit a moment: the ports are polled too.
			deadline := time.Now().Add(20 * time.Second)
			for {
				var alive []string
				for _, p := range ps {
					if p.running() {
						alive = append(alive, p.String())
					}
				}
				for _, port := range ports {
					if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
						c.Close()
						alive = append(alive, fmt.Sprintf("port %d", port))
					}
				}
				if len(alive) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still running or listening 20s after the launcher was killed: %v\nlauncher's output:\n%s", alive, out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
