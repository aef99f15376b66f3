//go:build linux

package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
	"github.com/distbench/distbench/internal/linkspec"
)

// leftovers lists the segments in /dev/shm that any of pids created.
func leftovers(t *testing.T, pids ...int) []string {
	t.Helper()
	ents, err := os.ReadDir(shmDir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		for _, pid := range pids {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("%s%d.", shmPrefix, pid)) {
				left = append(left, e.Name())
			}
		}
	}
	return left
}

// Messages of every size around the frame, the ring and the CMA threshold
// arrive intact in shared memory, posted before or after they arrive, from
// several senders at once, through the ring alone or by CMA.
func TestShmMessageSizes(t *testing.T) {
	sizes := []int{0, 1, 63, 64, 65, 4096, shmMinRing + 1, shmCMATest - 1, shmCMATest, shmRingSize - 1, shmRingSize + 1, 3*shmRingSize + 7}
	for _, tc := range []struct {
		name     string
		cma      int
		ringSize uint64
	}{{"cma", shmCMATest, 0}, {"ring only", -1, 0}, {"smallest ring", -1, shmMinRing}} {
		t.Run(tc.name, func(t *testing.T) {
			ring := tc.cma < 0
			m := newMesh(t, 2, func(rank int, o *TCPOptions) {
				o.Transport, o.HostID, o.cmaFrom, o.ringSize = linkspec.TransportShm, "h", tc.cma, tc.ringSize
			})
			ctx := ctxFor(t, 60*time.Second)
			if !ring && m.ts[0].peers[1].shm.seg.hdr.cma[0].Load() != 1 {
				t.Log("process_vm_readv is not allowed here: large messages go through the ring")
			}
			var wg sync.WaitGroup
			for i, n := range sizes {
				tag := uint64(i)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range 3 {
						if err := m.ts[0].Send(ctx, 1, tag, pattern(n, uint64(i*10+k))); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			for i, n := range sizes {
				for k := range 3 {
					if k == 1 {
						time.Sleep(5 * time.Millisecond) // some arrive first
					}
					got := make([]byte, n)
					if err := m.ts[1].Recv(ctx, 0, uint64(i), got); err != nil {
						t.Fatalf("size %d #%d: %v", n, k, err)
					}
					if !bytes.Equal(got, pattern(n, uint64(i*10+k))) {
						t.Fatalf("size %d #%d: payload differs", n, k)
					}
				}
			}
			wg.Wait()
			sent := m.ts[0].WireBytes().Sent
			recv := m.ts[1].WireBytes().Recv
			if sent != recv || sent == 0 {
				t.Errorf("wire bytes: sent %d, received %d", sent, recv)
			}
		})
	}
}

// A closing rank's messages already in the ring are delivered before the
// peer learns that it closed, and nothing is logged as lost.
func TestShmGracefulClose(t *testing.T) {
	m := newMesh(t, 2, func(rank int, o *TCPOptions) { o.Transport, o.HostID = linkspec.TransportShm, "h" })
	ctx := ctxFor(t, 30*time.Second)
	for i := range 50 {
		if err := m.ts[0].Send(ctx, 1, 1, pattern(100<<10, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	m.ts[0].Close()
	for i := range 50 {
		got := make([]byte, 100<<10)
		if err := m.ts[1].Recv(ctx, 0, 1, got); err != nil || !bytes.Equal(got, pattern(100<<10, uint64(i))) {
			t.Fatalf("message %d sent before Close: %v", i, err)
		}
	}
	err := m.ts[1].Recv(ctx, 0, 1, make([]byte, 1))
	var pe *collective.PeerError
	if !errors.Is(err, ErrPeerClosed) || !errors.As(err, &pe) || pe.Rank != 0 {
		t.Errorf("receive from the closed rank: %v, want ErrPeerClosed naming rank 0", err)
	}
	if err := m.ts[1].Send(ctx, 0, 1, []byte("x")); !errors.Is(err, ErrPeerClosed) {
		t.Errorf("send to the closed rank: %v, want ErrPeerClosed", err)
	}
	m.ts[1].Close()
	for r, l := range m.logs {
		if s := l.String(); strings.Contains(s, "lost") {
			t.Errorf("rank %d logged a lost peer on an orderly close:\n%s", r, s)
		}
	}
	if left := leftovers(t, os.Getpid()); len(left) > 0 {
		t.Errorf("left in %s: %v", shmDir, left)
	}
}

// A send that the receiver's ring cannot take in time fails at its
// deadline, naming the peer.
func TestShmSendDeadline(t *testing.T) {
	m := newMesh(t, 2, func(rank int, o *TCPOptions) { o.Transport, o.HostID, o.cmaFrom = linkspec.TransportShm, "h", -1 })
	// Stop rank 1's reader from draining the ring: our own link's stop
	// flag is what its reader checks.
	m.ts[1].peers[0].shm.stopped.Store(true)
	futexWake(lo32(&m.ts[1].peers[0].shm.in.ctl.head))
	<-m.ts[1].peers[0].shm.exited
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := m.ts[0].Send(ctx, 1, 1, make([]byte, 2*shmRingSize))
	if !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("got %v, want a timeout naming rank 1", err)
	}
}

// Under "shm", a pair on different hosts fails the mesh with an error that
// names the peer; under "auto" it stays on TCP.
func TestShmAcrossHosts(t *testing.T) {
	ts, errs, _ := startMesh(2, newMemStore(), func(rank int, o *TCPOptions) {
		o.Transport, o.HostID = linkspec.TransportShm, fmt.Sprint("host", rank)
	})
	closeAll(ts)
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "another host") {
			t.Errorf("rank %d: %v, want an error saying the peer is on another host", r, err)
		}
	}
	if err := linkspec.CheckTransport("udp"); err == nil || !strings.Contains(err.Error(), "accepted: auto, tcp, shm") {
		t.Errorf("linkspec.CheckTransport(udp): %v", err)
	}
}

// A segment whose creator died before its peer unlinked it is removed by
// the next job's sweep; a live creator's is not.
func TestShmSweepStale(t *testing.T) {
	dir := t.TempDir()
	old := shmDir
	shmDir = dir
	t.Cleanup(func() { shmDir = old })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	names := map[string]bool{
		fmt.Sprintf("%s%d.job.0-1.ab", shmPrefix, dead.Process.Pid): false,
		fmt.Sprintf("%s%d.job.0-1.cd", shmPrefix, os.Getpid()):      true,
		"unrelated": true,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sweepStale()
	for n, keep := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if kept := err == nil; kept != keep {
			t.Errorf("%s: kept %v, want %v", n, kept, keep)
		}
	}
}

// A real peer process in shared memory, killed with SIGKILL: a receive
// waiting for it fails with an error naming it, and nothing it or this
// process made is left in /dev/shm (segments are unlinked as soon as both
// ends have mapped them).
func TestShmKilledPeerLeavesNothing(t *testing.T) {
	t.Setenv(shmEnvCMA, fmt.Sprint(shmCMATest)) // both processes, CMA on
	l := liveness{heartbeat: 100 * time.Millisecond, peer: 2 * time.Second, probe: 4 * time.Second}
	pp := startPeerProcessOver(t, l, l, linkspec.TransportAuto)
	if pp.tr.PathTo(1) != linkspec.TransportShm {
		t.Skipf("the pair is on %s, not shared memory; rank 0's log:\n%s", pp.tr.PathTo(1), pp.logs)
	}
	pp.pingPong(t)
	ctx := ctxFor(t, 60*time.Second)
	// A large message, read by the peer's reader out of this process
	// (CMA when allowed) into its unexpected queue.
	if err := pp.tr.Send(ctx, 1, 3, pattern(4<<20, 1)); err != nil {
		t.Fatal(err)
	}
	peerPid := pp.cmd.Process.Pid
	if left := leftovers(t, os.Getpid(), peerPid); len(left) > 0 {
		t.Errorf("left in %s while both run: %v", shmDir, left)
	}
	errc := make(chan error, 1)
	go func() { errc <- pp.tr.Recv(ctx, 1, 7, make([]byte, 4)) }()
	pp.signal(t, syscall.SIGKILL)
	<-pp.exited
	err := <-errc
	var pe *collective.PeerError
	if !errors.As(err, &pe) || pe.Rank != 1 {
		t.Errorf("receive from the killed peer: %v, want a PeerError naming rank 1", err)
	}
	if err := pp.tr.Send(ctx, 1, 3, pattern(4<<20, 2)); !errors.As(err, &pe) || pe.Rank != 1 {
		t.Errorf("send to the killed peer: %v, want a PeerError naming rank 1", err)
	}
	pp.tr.Close()
	if left := leftovers(t, os.Getpid(), peerPid); len(left) > 0 {
		t.Errorf("left in %s after the kill: %v", shmDir, left)
	}
}

// BenchmarkShmPingPong is BenchmarkTCPPingPong over shared memory, the two
// ranks in one process (each spinning as the launcher lets a rank with a
// core of its own).
func BenchmarkShmPingPong(b *testing.B) {
	for _, size := range []int{8, 4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			pingPong(b, newMesh(b, 2, func(rank int, o *TCPOptions) {
				o.Transport, o.HostID, o.Spin = linkspec.TransportShm, "h", time.Millisecond
			}), size)
		})
	}
}

// Rings shrink as a host fills with ranks, so that all its pairs' rings
// stay within a budget, down to a floor.
func TestShmRingSizeFor(t *testing.T) {
	for _, tc := range []struct {
		k    int
		want uint64
	}{{1, shmRingSize}, {2, shmRingSize}, {16, shmRingSize}, {64, 256 << 10}, {512, shmMinRing}} {
		if got := ringSizeFor(tc.k); got != tc.want {
			t.Errorf("%d ranks on a host: rings of %d bytes, want %d", tc.k, got, tc.want)
		}
	}
}

// A receiver that waits on its own goroutine, taking frames out of the ring
// itself while it spins (shmLink.waitInline), keeps every guarantee of a
// parked one: the message lands (copied or reduced), the operation's
// deadline ends the wait, not the spin budget, and a peer's abort or our
// own Close ends it at once. The spin budget here is a minute, so a wait
// that ignored any of these would fail the elapsed-time checks by far.
func TestShmInlineWait(t *testing.T) {
	m := newMesh(t, 2, func(rank int, o *TCPOptions) {
		o.Transport, o.HostID, o.Spin = linkspec.TransportShm, "h", time.Minute
	})
	const slack = 30 * time.Second // far below the spin budget
	ctx := ctxFor(t, 2*slack)
	t.Run("messages", func(t *testing.T) {
		for i := range 50 { // posted before or after the message, as it happens
			if err := m.ts[0].Send(ctx, 1, 7, pattern(4096, uint64(i))); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4096)
			if err := m.ts[1].Recv(ctx, 0, 7, got); err != nil || !bytes.Equal(got, pattern(4096, uint64(i))) {
				t.Fatalf("message %d: %v, or its bytes differ", i, err)
			}
		}
		acc := collective.FromFloat32([]float32{1, 2, 3, 4})
		r, err := m.ts[1].PostRecvReduce(0, 8, acc.Data, kernels.Reduction(collective.Float32, collective.Sum))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.ts[0].Send(ctx, 1, 8, collective.FromFloat32([]float32{10, 20, 30, 40}).Data); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(ctx); err != nil || !slices.Equal(acc.Float32s(), []float32{11, 22, 33, 44}) {
			t.Fatalf("reduce receive: %v, %v", err, acc.Float32s())
		}
	})
	t.Run("deadline", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := m.ts[1].Recv(dctx, 0, 9, make([]byte, 8))
		if !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), "rank 0") {
			t.Errorf("got %v, want a timeout naming rank 0", err)
		}
		if d := time.Since(start); d > slack {
			t.Errorf("the wait ended after %v: it spun past its deadline", d)
		}
	})
	t.Run("abort", func(t *testing.T) {
		errc := make(chan error, 1)
		start := time.Now()
		go func() { errc <- m.ts[1].Recv(ctx, 0, 10, make([]byte, 8)) }()
		time.Sleep(20 * time.Millisecond)
		m.ts[0].Abort(errors.New("out of memory"))
		err := <-errc
		var pe *collective.PeerError
		if !errors.As(err, &pe) || pe.Rank != 0 || !strings.Contains(err.Error(), "out of memory") {
			t.Errorf("got %v, want rank 0's abort", err)
		}
		if d := time.Since(start); d > slack {
			t.Errorf("the wait ended %v after the abort", d)
		}
	})
}
