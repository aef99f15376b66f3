//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What the fault tests see of a job's processes, read from /proc as ps and
// ss would: who is whose child, its environment, whether it still runs, and
// its TCP sockets.

// jobProc is a process of a job under test; start (its start time in clock
// ticks) tells it from a later process that reuses its pid.
type jobProc struct {
	pid   int
	start string
	env   []string
}

func (p jobProc) getenv(key string) string {
	for _, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// String names the process as the launcher does: "rank 1", "server 0".
func (p jobProc) String() string {
	if i := p.getenv("DISTBENCH_SERVER_INDEX"); i != "" {
		return fmt.Sprintf("server %s (pid %d)", i, p.pid)
	}
	return fmt.Sprintf("rank %s (pid %d)", p.getenv("RANK"), p.pid)
}

// stat returns a process's state letter and start time, or ok false when
// there is no such process.
func stat(pid int) (state byte, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return 0, "", false
	}
	return f[0][0], f[19], true // fields 3 and 22
}

func ppidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// jobChildren lists ppid's children that are distbench workers or servers.
func jobChildren(ppid int) []jobProc {
	ents, _ := os.ReadDir("/proc")
	var ps []jobProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || ppidOf(pid) != ppid {
			continue
		}
		state, start, ok := stat(pid)
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if !ok || state == 'Z' || err != nil {
			continue
		}
		p := jobProc{pid: pid, start: start, env: strings.Split(string(env), "\x00")}
		if p.getenv("DISTBENCH_SPEC") != "" {
			ps = append(ps, p)
		}
	}
	return ps
}

// running reports whether p is still there: not exited, not a zombie, and
// not replaced by a process that took its pid.
func (p jobProc) running() bool {
	state, start, ok := stat(p.pid)
	return ok && state != 'Z' && start == p.start
}

// tcpSocket is one of a process's TCP sockets.
type tcpSocket struct {
	local, remote int // ports
	listening     bool
	established   bool
}

// sockets lists the TCP sockets p holds, by matching its descriptors'
// inodes against /proc/net/tcp and tcp6.
func (p jobProc) sockets() []tcpSocket {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", p.pid), fd.Name()))
		if ino, ok := strings.CutPrefix(l, "socket:["); ok && err == nil {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	port := func(addr string) int {
		_, hex, _ := strings.Cut(addr, ":")
		n, _ := strconv.ParseInt(hex, 16, 32)
		return int(n)
	}
	var out []tcpSocket
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(table)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			out = append(out, tcpSocket{local: port(f[1]), remote: port(f[2]), listening: f[3] == "0A", established: f[3] == "01"})
		}
	}
	return out
}

// waitForJob waits until ppid has want workers and servers and every
// worker holds at least conns established TCP connections besides its one to
// the store (so that it has joined its peers or servers and is running
// collectives), and returns them. exited is closed if the job ends first;
// output then says what it printed.
func waitForJob(t *testing.T, ppid, want, conns int, exited <-chan struct{}, output func() string) []jobProc {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ps := jobChildren(ppid)
		ready := len(ps) == want
		for _, p := range ps {
			n := 0
			for _, s := range p.sockets() {
				if s.established {
					n++
				}
			}
			if p.getenv("DISTBENCH_SERVER_INDEX") == "" && n < conns+1 {
				ready = false
			}
		}
		if ready {
			return ps
		}
		select {
		case <-exited:
			t.Fatalf("the job ended before it was running:\n%s", output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start: %d of %d processes %v", len(ps), want, ps)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killJob kills every process of ps still running, for a test's cleanup.
func killJob(ps []jobProc) {
	for _, p := range ps {
		if p.running() {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}
