package core_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/internal/wire"
)

// tokenRing's barrier passes a token around the ring from the last rank,
// so that, with the last rank absent, rank 0 waits for it, rank 1 for rank
// 0, and so on: a chain of waits. Its broadcast does nothing, so that a
// rank can be one operation ahead of the others.
type tokenRing struct{ core.Simple }

func (tokenRing) Barrier(c *core.Call) error {
	n, r := c.Size(), c.Rank()
	next, prev := (r+1)%n, (r+n-1)%n
	tok := make([]byte, 1)
	if r == n-1 {
		if err := c.Send(next, 0, tok); err != nil {
			return err
		}
		return c.Recv(prev, 0, tok)
	}
	if err := c.Recv(prev, 0, tok); err != nil {
		return err
	}
	return c.Send(next, 0, tok)
}

func (tokenRing) Broadcast(*core.Call, collective.Tensor, int) error { return nil }

// Its alltoall has ranks 0 and 1 each wait for the other first: a deadlock.
func (tokenRing) AllToAll(c *core.Call, _, _ collective.Tensor) error {
	return c.Recv(c.Rank()^1, 0, make([]byte, 1))
}

const (
	testJob = "diag-job"
	opLimit = 200 * time.Millisecond // the operations' timeout; the diagnosis budget is half
	// An abort waits this long for a stopped rank to acknowledge it.
	closeLimit = 300 * time.Millisecond
)

var testToken = []byte("diag-token")

// tcpWorld builds a TCP mesh of size ranks; fake ranks are not transports
// but bare connections that complete the handshake and then never read nor
// write, as a stopped process (SIGSTOP) would. It returns the transports
// (nil at fake ranks) and every rank's address.
func tcpWorld(t *testing.T, size int, fake map[int]bool) ([]driver.Transport, []string) {
	t.Helper()
	store := rendezvous.NewMemStore()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	trs := make([]driver.Transport, size)
	addrs := make([]string, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if fake[r] {
				addrs[r], errs[r] = stoppedRank(t, ctx, store, r, size)
				return
			}
			tr, err := transport.NewTCP(ctx, transport.TCPOptions{Rank: r, Size: size, Store: store, JobID: testJob, Token: testToken,
				CloseTimeout: closeLimit})
			if err != nil {
				errs[r] = err
				return
			}
			trs[r], addrs[r] = tr, tr.Addr()
			t.Cleanup(func() { tr.Close() })
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return trs, addrs
}

// stoppedRank joins the mesh as rank and then does nothing at all.
func stoppedRank(t *testing.T, ctx context.Context, store driver.Store, rank, size int) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { ln.Close() })
	addr := ln.Addr().String()
	// Published as a rank of the mesh publishes: its host, then its address.
	if err := store.Set(ctx, transport.DefaultKeyPrefix+strconv.Itoa(rank)+"/host", []byte("stopped-host")); err != nil {
		return "", err
	}
	if err := store.Set(ctx, transport.DefaultKeyPrefix+strconv.Itoa(rank), []byte(addr)); err != nil {
		return "", err
	}
	if rank != size-1 {
		return "", errors.New("only the highest rank can be stopped: it dials every other and accepts none")
	}
	for peer := range rank {
		a, err := store.Get(ctx, transport.DefaultKeyPrefix+strconv.Itoa(peer))
		if err != nil {
			return "", err
		}
		c, err := net.Dial("tcp", string(a))
		if err != nil {
			return "", err
		}
		t.Cleanup(func() { c.Close() })
		if err := wire.ClientHandshake(ctx, c, wire.HandshakeConfig{JobID: testJob, Token: testToken, Rank: rank, Size: size}, peer); err != nil {
			return "", err
		}
	}
	return addr, nil
}

func memMesh(t *testing.T, size int) ([]driver.Transport, []string) {
	ms := transport.NewMemWorld(size, transport.MemOptions{})
	trs := make([]driver.Transport, size)
	for r, m := range ms {
		trs[r] = m
		t.Cleanup(func() { m.Close() })
	}
	return trs, make([]string, size)
}

// runRanks runs op on a token-ring group at each rank in ranks and returns
// their errors.
func runRanks(t *testing.T, trs []driver.Transport, ranks []int, op func(r int, g *core.Group) error) map[int]error {
	t.Helper()
	type result struct {
		rank int
		err  error
	}
	results := make(chan result, len(ranks))
	for _, r := range ranks {
		g, err := core.New("test", collective.Config{Rank: r, Size: len(trs), Transport: trs[r], Timeout: opLimit},
			func(*core.Group) (core.Algorithms, error) { return tokenRing{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		go func() { results <- result{r, op(r, g)} }()
	}
	errs := map[int]error{}
	for range ranks {
		select {
		case res := <-results:
			t.Logf("rank %d: %v", res.rank, res.err)
			errs[res.rank] = res.err
		case <-time.After(20 * time.Second):
			t.Fatal("an operation hangs")
		}
	}
	return errs
}

func barrier(_ int, g *core.Group) error { return g.Barrier(context.Background()) }

// Every rank's error names the rank that stalls the job, however far down
// the chain of waits it is, with its address where it has one: the first
// to time out says so, and its abort carries that to the others.
func TestTimeoutsNameTheStalledRank(t *testing.T) {
	for _, tc := range []struct {
		name  string
		world func(t *testing.T) ([]driver.Transport, []string)
		want  string // after "rank 3" and its address
	}{
		{"mem/absent", func(t *testing.T) ([]driver.Transport, []string) { return memMesh(t, 4) },
			" waits for no message: it has not joined barrier #0 (busy or stuck elsewhere)"},
		{"tcp/absent", func(t *testing.T) ([]driver.Transport, []string) { return tcpWorld(t, 4, nil) },
			" waits for no message: it has not joined barrier #0 (busy or stuck elsewhere)"},
		{"tcp/stopped", func(t *testing.T) ([]driver.Transport, []string) { return tcpWorld(t, 4, map[int]bool{3: true}) },
			" did not answer within 100ms (stopped, stuck, or too starved of CPU to answer)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trs, addrs := tc.world(t)
			start := time.Now()
			errs := runRanks(t, trs, []int{0, 1, 2}, barrier)
			// The deadline, a diagnosis that may wait out its budget,
			// an abort that waits for a stopped rank's goodbye, and
			// slack for a loaded machine.
			if el := time.Since(start); el > opLimit+opLimit/2+closeLimit+time.Second {
				t.Errorf("the ranks failed after %v", el)
			}
			culprit := "rank 3"
			if addrs[3] != "" {
				culprit += " (" + addrs[3] + ")"
			}
			timeouts := 0
			for r, err := range errs {
				msg := err.Error()
				// Where the chain starts at rank 3 itself, its address
				// is in the timeout already.
				if !strings.Contains(msg, culprit+tc.want) && !strings.Contains(msg, culprit+"; rank 3"+tc.want) {
					t.Errorf("rank %d: %v\ndoes not say %q", r, err, culprit+tc.want)
				}
				if errors.Is(err, collective.ErrTimeout) {
					timeouts++
				} else if !errors.Is(err, collective.ErrAborted) {
					t.Errorf("rank %d: %v: neither a timeout nor an abort", r, err)
				}
			}
			if timeouts == 0 {
				t.Error("no rank reports its own timeout")
			}
		})
	}
}

// A chain that comes back to its start, with no rank to blame, is a cycle;
// a rank that waits in another operation is said to, with its number.
func TestTimeoutsDescribeCyclesAndOrder(t *testing.T) {
	const cycle = ": a cycle of waits"
	for _, tc := range []struct {
		name  string
		ranks []int
		op    func(r int, g *core.Group) error
		want  []string
	}{
		{"deadlock", []int{0, 1}, func(r int, g *core.Group) error {
			t := collective.NewTensor(collective.Float32, 4)
			return g.AllToAll(context.Background(), t, t)
		}, []string{"waits for rank 1 (this rank), which waits for rank 0" + cycle, "waits for rank 0 (this rank), which waits for rank 1" + cycle}},
		// Rank 3 has done one more operation than the others: it is
		// in barrier #1 while they are in barrier #0.
		{"order", []int{0, 1, 2, 3}, func(r int, g *core.Group) error {
			if r == 3 {
				g.Broadcast(context.Background(), collective.NewTensor(collective.Float32, 1), 0)
			}
			return g.Barrier(context.Background())
		}, []string{"waits in operation #1 for rank", "waits in operation #0 for rank"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trs, _ := memMesh(t, 4)
			errs := runRanks(t, trs, tc.ranks, tc.op)
			for r, err := range errs {
				msg := err.Error()
				found := false
				for _, w := range tc.want {
					found = found || strings.Contains(msg, w)
				}
				if !found || !strings.Contains(msg, cycle) {
					t.Errorf("rank %d: %v\ndoes not say any of %q", r, err, tc.want)
				}
			}
		})
	}
}
