//go:build linux && cgo

package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An nccl rank killed with SIGKILL mid-run (through the stand-in, whose
// hub notices the connection drop as NCCL's proxies notice a dead peer)
// ends every survivor's operation with an error naming the operation, its
// sequence number and the dead rank, not at the deadline (5m here). A
// survivor that is a step behind may instead find rank 0's process, which
// holds the stand-in's hub, already gone after its own error: then its
// error says that it lost the hub.
func TestRunNCCLPeerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	useStandin(t)
	const np, victim = 4, 2
	res, done := startCLI(t, "run", "--strategy", "nccl", "--np", strconv.Itoa(np),
		"-b", "4MiB", "-e", "4MiB", "--iters", "100000000", "--warmup", "1", "--timeout", "5m")
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
	if el := res.ended.Sub(killed); el > time.Minute {
		t.Errorf("took %v after the kill to fail", el)
	}
	namesOp := regexp.MustCompile(`nccl: (allreduce|barrier) #\d+`)
	dead := fmt.Sprintf("rank %d left the communicator", victim)
	for r := range np {
		if r == victim {
			continue
		}
		line := lastError(res.stderr, fmt.Sprintf("rank %d", r))
		switch {
		case line == "":
			t.Errorf("rank %d reported no error:\n%s", r, res.stderr)
		case !(strings.Contains(line, dead) || strings.Contains(line, "lost the connection to the hub")) || !namesOp.MatchString(line):
			t.Errorf("rank %d's error does not name rank %d and the operation: %s", r, victim, line)
		case strings.Contains(line, "timed out"):
			t.Errorf("rank %d waited for its deadline: %s", r, line)
		}
	}
}
