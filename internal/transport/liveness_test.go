package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/rendezvous"
)

// livenessPeerEnv, set, makes the test binary rank 1 of a two-rank mesh
// whose file store it names: a real process, which a test can stop
// (SIGSTOP) and continue. livenessOptsEnv gives its HeartbeatInterval,
// PeerTimeout and ProbeTimeout.
const (
	livenessPeerEnv = "DISTBENCH_TRANSPORT_LIVENESS_PEER"
	livenessOptsEnv = "DISTBENCH_TRANSPORT_LIVENESS_OPTS"
	// livenessTransportEnv is its TCPOptions.Transport.
	livenessTransportEnv = "DISTBENCH_TRANSPORT_LIVENESS_TRANSPORT"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(livenessPeerEnv); path != "" {
		os.Exit(livenessPeer(path, os.Getenv(livenessOptsEnv)))
	}
	os.Exit(m.Run())
}

// liveness is the part of TCPOptions these tests vary.
type liveness struct{ heartbeat, peer, probe time.Duration }

func (l liveness) String() string { return fmt.Sprintf("%v,%v,%v", l.heartbeat, l.peer, l.probe) }

func (l liveness) apply(o *TCPOptions) {
	o.HeartbeatInterval, o.PeerTimeout, o.ProbeTimeout = l.heartbeat, l.peer, l.probe
}

// livenessPeer joins the mesh as rank 1 and answers every "ping" from rank
// 0 with "pong", until rank 0 closes. Any error is printed, with exit
// status 1.
func livenessPeer(path, opts string) int {
	fail := func(err error) int { fmt.Println("peer:", err); return 1 }
	var l liveness
	parts := strings.Split(opts, ",")
	for i, d := range []*time.Duration{&l.heartbeat, &l.peer, &l.probe} {
		v, err := time.ParseDuration(parts[min(i, len(parts)-1)])
		if err != nil {
			return fail(fmt.Errorf("%s=%q: %v", livenessOptsEnv, opts, err))
		}
		*d = v
	}
	ctx := context.Background()
	store, err := rendezvous.OpenFile(ctx, path, rendezvous.FileOptions{Timeout: 20 * time.Second})
	if err != nil {
		return fail(err)
	}
	o := TCPOptions{Rank: 1, Size: 2, Store: store, JobID: "liveness", Token: testToken, ConnectTimeout: 20 * time.Second,
		Logf: func(f string, args ...any) { fmt.Printf(f+"\n", args...) }, Transport: os.Getenv(livenessTransportEnv)}
	l.apply(&o)
	tr, err := NewTCP(ctx, o)
	if err != nil {
		return fail(err)
	}
	defer tr.Close()
	b := make([]byte, 4)
	for {
		err := tr.Recv(ctx, 0, 1, b)
		switch {
		case errors.Is(err, ErrPeerClosed):
			return 0
		case err != nil:
			return fail(err)
		}
		if err := tr.Send(ctx, 0, 2, []byte("pong")); err != nil {
			return fail(err)
		}
	}
}

// peerProcess is rank 1 in a process of its own, and rank 0, here, with
// which it forms a mesh.
type peerProcess struct {
	cmd    *exec.Cmd
	out    *strings.Builder // its output, once it has exited
	exited chan struct{}
	tr     *TCP
	logs   *logLines
}

func startPeerProcess(t *testing.T, here, there liveness) *peerProcess {
	t.Helper()
	return startPeerProcessOver(t, here, there, "")
}

// startPeerProcessOver is startPeerProcess with both ranks' Transport.
func startPeerProcessOver(t *testing.T, here, there liveness, transport string) *peerProcess {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store")
	store, err := rendezvous.OpenFile(context.Background(), path, rendezvous.FileOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pp := &peerProcess{cmd: exec.Command(os.Args[0]), out: &strings.Builder{}, exited: make(chan struct{}), logs: &logLines{}}
	pp.cmd.Env = append(os.Environ(), livenessPeerEnv+"="+path, livenessOptsEnv+"="+there.String(), livenessTransportEnv+"="+transport)
	stdout, err := pp.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pp.cmd.Stderr = pp.cmd.Stdout
	if err := pp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			pp.out.WriteString(sc.Text() + "\n")
		}
		pp.cmd.Wait()
		close(pp.exited)
	}()
	t.Cleanup(func() {
		pp.cmd.Process.Kill() // stopped or not
		<-pp.exited
	})
	o := TCPOptions{Rank: 0, Size: 2, Store: store, JobID: "liveness", Token: testToken, ConnectTimeout: 20 * time.Second, Logf: pp.logs.logf, Transport: transport}
	here.apply(&o)
	pp.tr, err = NewTCP(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pp.tr.Close() })
	return pp
}

func (pp *peerProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := pp.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v: %v", sig, err)
	}
}

// pingPong checks that the peer process answers, and is not dead to it.
func (pp *peerProcess) pingPong(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	b := make([]byte, 4)
	err := pp.tr.Send(ctx, 1, 1, []byte("ping"))
	if err == nil {
		err = pp.tr.Recv(ctx, 1, 2, b)
	}
	if err != nil || string(b) != "pong" {
		select {
		case <-pp.exited:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("ping: %v (%q); rank 0's log:\n%s\nrank 1's output:\n%s", err, b, pp.logs, pp.out)
	}
}

// A process stopped by SIGSTOP never answers: it is declared dead, with an
// error naming its rank and address, once it has been silent for
// PeerTimeout and then ProbeTimeout more; not before, and not much after.
func TestStoppedPeerIsDeclaredDead(t *testing.T) {
	l := liveness{heartbeat: 50 * time.Millisecond, peer: 300 * time.Millisecond, probe: 600 * time.Millisecond}
	pp := startPeerProcess(t, l, l)
	pp.pingPong(t)
	pp.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	err := pp.tr.Recv(ctxFor(t, time.Minute), 1, 2, make([]byte, 4))
	el := time.Since(stopped)
	t.Logf("after %v: %v", el, err)
	var pe *collective.PeerError
	if !errors.As(err, &pe) || pe.Rank != 1 || pe.Addr != pp.tr.PeerAddr(1) || !errors.Is(err, collective.ErrTimeout) ||
		!strings.Contains(err.Error(), "nor did it answer a probe") {
		t.Fatalf("got %v, want a PeerError naming rank 1 (%s) that did not answer a probe", err, pp.tr.PeerAddr(1))
	}
	// Its last heartbeat may have left up to an interval before it stopped.
	if bound := l.peer + l.probe; el < bound-l.heartbeat || el > 10*bound {
		t.Errorf("declared dead %v after it stopped, want %v (PeerTimeout + ProbeTimeout)", el, bound)
	}
}

// Silence alone does not kill: a process stopped for longer than
// PeerTimeout and then continued, as a starved one is, answers the probe
// late and stays alive; so does this rank when it was the one stopped, and
// finds, late, the heartbeats that came meanwhile.
func TestSlowPeerStaysAlive(t *testing.T) {
	short := liveness{heartbeat: 50 * time.Millisecond, peer: 300 * time.Millisecond, probe: 600 * time.Millisecond}
	patient := liveness{heartbeat: 50 * time.Millisecond, peer: time.Minute, probe: time.Minute}
	tests := []struct {
		name        string
		here, there liveness
		stop        time.Duration // under PeerTimeout + ProbeTimeout of the rank that waits
		want        string        // in rank 0's log, if anything
	}{
		{"peer stopped past PeerTimeout, then continued",
			liveness{heartbeat: 200 * time.Millisecond, peer: time.Second, probe: 5 * time.Second},
			liveness{heartbeat: 200 * time.Millisecond, peer: time.Second, probe: 5 * time.Second},
			2 * time.Second, "slow, not dead"},
		// Rank 1 is stopped for three times its PeerTimeout + ProbeTimeout;
		// rank 0's own timeouts are long, so that only rank 1 could err.
		{"this rank stopped past its own timeouts, then continued", patient, short,
			3 * (short.peer + short.probe), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp := startPeerProcess(t, tt.here, tt.there)
			pp.pingPong(t)
			pp.signal(t, syscall.SIGSTOP)
			time.Sleep(tt.stop)
			pp.signal(t, syscall.SIGCONT)
			pp.pingPong(t)
			if !strings.Contains(pp.logs.String(), tt.want) {
				t.Errorf("rank 0's log does not say %q:\n%s", tt.want, pp.logs)
			}
		})
	}
}

// A peer whose heartbeats are withheld, but whose reader runs, answers
// every probe: it is alive however long it stays silent.
func TestSilentPeerAnswersProbes(t *testing.T) {
	const silent = 2
	m := newMesh(t, 3, func(rank int, o *TCPOptions) {
		o.HeartbeatInterval, o.PeerTimeout, o.ProbeTimeout = 50*time.Millisecond, 200*time.Millisecond, 10*time.Second
		if rank == silent {
			o.HeartbeatInterval, o.PeerTimeout = -1, -1
		}
	})
	// Probed and answered twice: silent for twice PeerTimeout at least.
	for start := time.Now(); strings.Count(m.logs[0].String(), "slow, not dead") < 2; time.Sleep(10 * time.Millisecond) {
		if s := m.logs[0].String(); strings.Contains(s, "lost rank") || time.Since(start) > 30*time.Second {
			t.Fatalf("rank 0 did not probe rank %d twice and keep it:\n%s", silent, s)
		}
	}
	ctx := ctxFor(t, 10*time.Second)
	if err := m.ts[silent].Send(ctx, 0, 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := m.ts[0].Recv(ctx, silent, 1, make([]byte, 1)); err != nil {
		t.Fatalf("the silent peer was dropped: %v\n%s", err, m.logs[0])
	}
	// The ranks that heartbeat were never probed.
	if s := m.logs[1].String(); strings.Contains(s, "probing rank 0") {
		t.Errorf("rank 1 probed rank 0, which heartbeats:\n%s", s)
	}
}
