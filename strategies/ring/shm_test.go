package ring_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
)

// shmWorld connects n ranks through the TCP mesh with every pair in shared
// memory (transport "shm", all ranks on one host); the test's cleanup
// closes them.
func shmWorld(t testing.TB, n int, opts map[string]string) []collective.Comm {
	return meshWorld(t, n, opts, transport.TransportShm, func(int) string { return "one-host" })
}

// meshWorld is shmWorld with a transport and each rank's host of its own.
func meshWorld(t testing.TB, n int, opts map[string]string, tr string, host func(rank int) string) []collective.Comm {
	store := rendezvous.NewMemStore()
	comms := make([]collective.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			tr, err := transport.NewTCP(context.Background(), transport.TCPOptions{
				Rank: r, Size: n, Store: store, JobID: "ring-shm", Token: []byte("ring-shm"),
				ConnectTimeout: 30 * time.Second, Transport: tr, HostID: host(r),
			})
			if err != nil {
				errs[r] = err
				return
			}
			comms[r], errs[r] = collective.New(context.Background(), "ring",
				collective.Config{Rank: r, Size: n, Transport: tr, Options: opts})
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

// The short suite over shared memory: the ring and CMA paths of the
// transport under the engine's posted and reducing receives.
func TestConformanceShm(t *testing.T) {
	if !transport.ShmSupported {
		t.Skip("no shared-memory transport on this platform")
	}
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return shmWorld(t, n, map[string]string{"chunk": "64KiB"})
	}, collectivetest.Options{Short: true, WorldSizes: []int{1, 2, 3, 4, 5}})
}

// Ranks on two hosts under "auto": shared memory within each, TCP between,
// in one mesh.
func TestConformanceShmMixed(t *testing.T) {
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return meshWorld(t, n, map[string]string{"chunk": "64KiB"}, transport.TransportAuto, func(r int) string { return fmt.Sprint("host", r%2) })
	}, collectivetest.Options{Short: true, WorldSizes: []int{3, 4, 5}})
}
