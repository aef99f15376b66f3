package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/wire"
)

// diagWorld is a world of transports that can diagnose, with what the tests
// need to reach inside them.
type diagWorld struct {
	trs []interface {
		driver.Transport
		driver.Diagnoser
	}
	waits func(rank int) []wire.Wait // rank's wait state, as it would answer
}

func diagWorlds(t *testing.T) map[string]func(t *testing.T, n int) diagWorld {
	return map[string]func(t *testing.T, n int) diagWorld{
		"mem": func(t *testing.T, n int) diagWorld {
			ms := NewMemWorld(n, MemOptions{})
			t.Cleanup(func() {
				for _, m := range ms {
					m.Close()
				}
			})
			w := diagWorld{waits: func(r int) []wire.Wait { return ms[r].waitState() }}
			for _, m := range ms {
				w.trs = append(w.trs, m)
			}
			return w
		},
		"tcp": func(t *testing.T, n int) diagWorld {
			m := newMesh(t, n, nil)
			w := diagWorld{waits: func(r int) []wire.Wait { return m.ts[r].waitState() }}
			for _, tr := range m.ts {
				w.trs = append(w.trs, tr)
			}
			return w
		},
	}
}

// block has rank wait for a message from peer that never comes, until the
// test ends, and returns once the wait shows in rank's wait state.
func (w diagWorld) block(t *testing.T, rank, peer int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.trs[rank].Recv(ctx, peer, 5, make([]byte, 1))
	}()
	t.Cleanup(func() { cancel(); <-done })
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		for _, wt := range w.waits(rank) {
			if wt.Peer == peer {
				return
			}
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("rank %d's wait for rank %d does not show", rank, peer)
		}
	}
}

// chainString renders a chain compactly: "1>0 0>3 3." (a rank waiting for
// nobody), "3!" (no answer), "0>3s" (a send).
func chainString(chain []driver.WaitState) string {
	var parts []string
	for _, w := range chain {
		switch {
		case w.Err != nil:
			parts = append(parts, fmt.Sprintf("%d!", w.Rank))
		case w.Peer < 0:
			parts = append(parts, fmt.Sprintf("%d.", w.Rank))
		case w.Send:
			parts = append(parts, fmt.Sprintf("%d>%ds", w.Rank, w.Peer))
		default:
			parts = append(parts, fmt.Sprintf("%d>%d", w.Rank, w.Peer))
		}
	}
	return strings.Join(parts, " ")
}

// A rank that times out follows the chain of waits to the rank that stalls
// it: one blocked in nothing, named with its address.
func TestDiagnoseChain(t *testing.T) {
	for _, tc := range []struct {
		name         string
		blocked      [][2]int // rank, the peer it waits for
		asker, first int
		want         string
	}{
		{"absent rank", nil, 0, 3, "3."},
		{"chain of two", [][2]int{{0, 3}, {1, 0}}, 2, 1, "1>0 0>3 3."},
		// The asker has timed out on first, and still says so: a
		// chain that comes back to it is a cycle.
		{"cycle through the asker", [][2]int{{1, 2}}, 2, 1, "1>2 2>1"},
		{"cycle", [][2]int{{1, 0}, {0, 1}}, 2, 1, "1>0 0>1"},
		// Rank 1 waits for both 0 and 3; 0 waits for 1 (a cycle),
		// but the path through 3 ends at a rank to blame, which says
		// more.
		{"two waits", [][2]int{{1, 0}, {1, 3}, {0, 1}}, 2, 1, "1>3 3."},
	} {
		for wname, newWorld := range diagWorlds(t) {
			t.Run(tc.name+"/"+wname, func(t *testing.T) {
				w := newWorld(t, 4)
				for _, b := range tc.blocked {
					w.block(t, b[0], b[1])
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
				defer cancel()
				if err := w.trs[tc.asker].Recv(ctx, tc.first, 5, make([]byte, 1)); !errors.Is(err, collective.ErrTimeout) {
					t.Fatalf("Recv: %v, want a timeout", err)
				}
				dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer dcancel()
				chain := w.trs[tc.asker].Diagnose(dctx, tc.first)
				if got := chainString(chain); got != tc.want {
					t.Fatalf("chain %s, want %s (%+v)", got, tc.want, chain)
				}
				for _, ws := range chain {
					if ws.Addr != w.trs[tc.asker].PeerAddr(ws.Rank) {
						t.Errorf("rank %d's address is %q, want %q", ws.Rank, ws.Addr, w.trs[tc.asker].PeerAddr(ws.Rank))
					}
					if ws.Peer >= 0 && (ws.Tag != 5 || ws.For <= 0) {
						t.Errorf("rank %d waits under tag %d for %v; want tag 5 and a duration", ws.Rank, ws.Tag, ws.For)
					}
					if ws.Rank == tc.asker && !ws.TimedOut {
						t.Errorf("the asker's own wait is not marked as timed out: %+v", ws)
					}
				}
			})
		}
	}
}

// A rank that does not answer (its connection is stalled: its write lock is
// held) ends the chain, as the rank to blame, within the budget.
func TestDiagnoseNoAnswer(t *testing.T) {
	const budget = 150 * time.Millisecond
	for _, tc := range []struct {
		name         string
		blocked      [][2]int
		asker, first int
		want         string
	}{
		{"direct", nil, 0, 3, "3!"},
		{"through a chain", [][2]int{{0, 3}, {1, 0}}, 2, 1, "1>0 0>3 3!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMesh(t, 4, nil)
			w := diagWorld{waits: func(r int) []wire.Wait { return m.ts[r].waitState() }}
			for _, tr := range m.ts {
				w.trs = append(w.trs, tr)
			}
			for _, b := range tc.blocked {
				w.block(t, b[0], b[1])
			}
			stalled := m.ts[3].peers[tc.asker]
			stalled.wmu <- struct{}{} // rank 3 cannot write to the asker
			defer stalled.unlock()
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			start := time.Now()
			chain := m.ts[tc.asker].Diagnose(ctx, tc.first)
			el := time.Since(start)
			if got := chainString(chain); got != tc.want {
				t.Fatalf("chain %s, want %s (%+v)", got, tc.want, chain)
			}
			last := chain[len(chain)-1]
			if !errors.Is(last.Err, context.DeadlineExceeded) || last.Addr != m.ts[3].Addr() {
				t.Errorf("last %+v; want rank 3 at %s, not answering by the deadline", last, m.ts[3].Addr())
			}
			if el < budget-10*time.Millisecond || el > budget+time.Second {
				t.Errorf("the diagnosis took %v with a budget of %v", el, budget)
			}
		})
	}
}

// A rank blocked in a send (its peer reads nothing) is waiting for that
// peer.
func TestDiagnoseSend(t *testing.T) {
	m := newMesh(t, 3, nil)
	p := m.ts[0].peers[2]
	p.sendTag.Store(9)
	p.sendSince.Store(mono(time.Now()))
	defer p.sendSince.Store(0)
	time.Sleep(20 * time.Millisecond)
	chain := m.ts[1].Diagnose(ctxFor(t, 5*time.Second), 0)
	if got, want := chainString(chain), "0>2s 2."; got != want {
		t.Fatalf("chain %s, want %s (%+v)", got, want, chain)
	}
	if chain[0].Tag != 9 || chain[0].For < 20*time.Millisecond {
		t.Errorf("the send: %+v", chain[0])
	}
}

// A rank that aborted, or closed, is reported as such, at once.
func TestDiagnoseGoneRank(t *testing.T) {
	for wname, newWorld := range diagWorlds(t) {
		for _, how := range []string{"abort", "close"} {
			t.Run(wname+"/"+how, func(t *testing.T) {
				w := newWorld(t, 3)
				if how == "abort" {
					w.trs[2].Abort(errors.New("disk on fire"))
				} else {
					w.trs[2].Close()
				}
				var chain []driver.WaitState
				// Over TCP the goodbye takes a moment to arrive.
				for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(time.Millisecond) {
					chain = w.trs[0].Diagnose(ctxFor(t, 5*time.Second), 2)
					if len(chain) == 1 && chain[0].Err != nil {
						break
					}
				}
				if got := chainString(chain); got != "2!" {
					t.Fatalf("chain %s, want 2! (%+v)", got, chain)
				}
				err := chain[0].Err
				switch how {
				case "abort":
					if !errors.Is(err, collective.ErrAborted) || !strings.Contains(err.Error(), "disk on fire") {
						t.Errorf("an aborted rank: %v, want its abort", err)
					}
				case "close":
					if !errors.Is(err, ErrPeerClosed) {
						t.Errorf("a closed rank: %v, want ErrPeerClosed", err)
					}
				}
			})
		}
	}
}

// Queries are cheap to answer and harmless to a busy link: a flood of them
// while messages flow loses no message.
func TestDiagnoseDuringTraffic(t *testing.T) {
	m := newMesh(t, 2, nil)
	ctx := ctxFor(t, 20*time.Second)
	const msgs = 200
	done := make(chan error, 1)
	go func() {
		for i := range msgs {
			if err := m.ts[0].Send(ctx, 1, 1, pattern(4096, uint64(i))); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	stop := make(chan struct{})
	queried := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				queried <- n
				return
			default:
			}
			m.ts[1].Diagnose(ctx, 0)
			m.ts[0].Diagnose(ctx, 1)
			n++
		}
	}()
	buf := make([]byte, 4096)
	for i := range msgs {
		if err := m.ts[1].Recv(ctx, 0, 1, buf); err != nil {
			t.Fatal(err)
		}
		if string(buf) != string(pattern(4096, uint64(i))) {
			t.Fatalf("message %d corrupted", i)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d diagnoses during %d messages", <-queried, msgs)
}

// An abort reaches ranks one after another. A rank it has reached is blocked
// in nothing any more; asked meanwhile by one it has not reached yet, it
// answers with the abort, not "blocked in nothing" (which would blame it
// for not having joined the operation that the abort ended).
func TestDiagnoseAbortHalfDelivered(t *testing.T) {
	ms := NewMemWorld(3, MemOptions{})
	t.Cleanup(func() {
		for _, m := range ms {
			m.Close()
		}
	})
	w := diagWorld{waits: func(r int) []wire.Wait { return ms[r].waitState() }}
	for _, m := range ms {
		w.trs = append(w.trs, m)
	}
	w.block(t, 0, 1)
	// Rank 2's abort, as Mem.Abort delivers it, after rank 0 and before
	// rank 1.
	aborted := &collective.PeerError{Rank: 2, Err: fmt.Errorf("%w: disk on fire", collective.ErrAborted)}
	for _, box := range ms[0].boxes {
		box.Fail(aborted)
	}
	chain := ms[1].Diagnose(ctxFor(t, 5*time.Second), 0)
	if got := chainString(chain); got != "0!" || !errors.Is(chain[0].Err, collective.ErrAborted) {
		t.Fatalf("chain %s (%+v), want rank 0 to answer with rank 2's abort", got, chain)
	}
}
