//go:build linux

package transport

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// A reader that has parked (its peer was quiet for longer than the spin
// budget) must be woken when its message arrives by whatever spins on the
// processor meanwhile, not by the scheduler's network poll, which spinning
// holds off (for up to 10 ms). Here the test goroutine is that spinner, on
// the one processor the local launcher gives each process on a small
// machine: it does what a spinning reader or writer does between polls.
//
// The runtime's sysmon thread also polls the network when it has not been
// polled for 10 ms, and on a loaded machine this process can be off the CPU
// that long between the send and the spinner's first look: that round's
// message then legitimately comes through the poll, with no kick. So every
// round must deliver intact with at most one kick, and the kick path must
// carry at least one of up to maxRounds rounds: on a quiet machine it
// carries the first.
func TestSpinWakesParkedReader(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const spin = time.Millisecond
	m := newMesh(t, 2, func(rank int, o *TCPOptions) { o.Spin = spin })
	ctx := ctxFor(t, 20*time.Second)
	r0 := m.ts[0]
	const maxRounds = 30
	kicked := 0
	for round := 0; round < maxRounds && kicked == 0; round++ {
		end := r0.peers[1].dr.end
		for deadline := time.Now().Add(5 * time.Second); !end.parked.Load(); {
			if time.Now().After(deadline) {
				t.Fatal("rank 0's reader for rank 1 never parked")
			}
			time.Sleep(spin)
		}
		before := r0.spinners.kicks.Load()
		want := pattern(4096, uint64(round))
		got := make([]byte, len(want))
		rv, err := r0.PostRecv(1, 9, got)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.ts[1].Send(ctx, 0, 9, want); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- rv.Wait(ctx) }()
	spin:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				break spin
			default:
				r0.spinners.wakeParked()
				runtime.Gosched()
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: message corrupted", round)
		}
		switch kicks := r0.spinners.kicks.Load() - before; kicks {
		case 0: // the scheduler's poll got there first (see above)
		case 1:
			kicked++
		default:
			t.Fatalf("round %d: %d kicks for one parked reader, want at most 1", round, kicks)
		}
		// The kicked reader restored its deadline: the link still works,
		// and a quiet peer would still be caught (TestTCPStalledPeer).
		if err := r0.peers[1].err(); err != nil {
			t.Fatal(err)
		}
	}
	if kicked == 0 {
		t.Errorf("in %d rounds no message came through the spinner's kick: every one waited for the scheduler's poll", maxRounds)
	}
}
