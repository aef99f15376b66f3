package collectivetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
)

// TCPWorld connects n ranks of strategy, all in this process, through the
// TCP mesh on loopback, as the launcher's processes are (shared memory too,
// where tweak asks for it), with options opts; tweak, if not nil, adjusts
// each rank's transport options (its host, its transport, a link). The
// test's cleanup closes them; a rank that fails to join fails the test.
func TCPWorld(t testing.TB, strategy string, n int, opts map[string]string, tweak func(rank int, o *transport.TCPOptions)) []collective.Comm {
	t.Helper()
	store := rendezvous.NewMemStore()
	job, token := "collectivetest-"+strategy, []byte("collectivetest-"+strategy)
	comms := make([]collective.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			o := transport.TCPOptions{Rank: r, Size: n, Store: store, JobID: job, Token: token, ConnectTimeout: 30 * time.Second}
			if tweak != nil {
				tweak(r, &o)
			}
			tr, err := transport.NewTCP(context.Background(), o)
			if err != nil {
				errs[r] = err
				return
			}
			comms[r], errs[r] = collective.New(context.Background(), strategy, collective.Config{
				Rank: r, Size: n, Transport: tr, Store: store, Options: opts, JobID: job, Token: token,
			})
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, c := range comms {
			if c != nil {
				wg.Go(func() { c.Close() })
			}
		}
		wg.Wait()
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return comms
}

// MemWorld builds strategy's communicator, with options opts, on every
// rank of an n-rank in-memory world made with mo (its delays, seed and
// hosts).
func MemWorld(t testing.TB, strategy string, n int, opts map[string]string, mo transport.MemOptions) []collective.Comm {
	t.Helper()
	trs := transport.NewMemWorld(n, mo)
	comms := make([]collective.Comm, n)
	for r := range n {
		c, err := collective.New(t.Context(), strategy, collective.Config{Rank: r, Size: n, Transport: trs[r], Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		comms[r] = c
	}
	return comms
}
