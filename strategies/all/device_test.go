package all

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
)

// The strategies that do not take device memory themselves (every one but
// nccl, whose own tests run this suite on the stand-in's device memory)
// pass the conformance suite on device tensors, which the engine stages
// through pinned host memory for them; the fake device's memory cannot be
// read except through its copies, so a strategy that touched a device
// tensor's Data would fail the suite. Every pinned buffer is freed when the
// worlds close.
func TestConformanceOnDevice(t *testing.T) {
	for _, name := range []string{"ring", "tree", "ps"} {
		t.Run(name, func(t *testing.T) {
			var dev collectivetest.FakeDevice
			collectivetest.Run(t, collectivetest.OnDevice(func(t testing.TB, n int) []collective.Comm {
				return memWorld(t, name, n)
			}, dev.Alloc), collectivetest.Options{WorldSizes: []int{1, 2, 3, 4, 8}, Short: true})
			if dev.PinnedAllocs == 0 || dev.Copies == 0 {
				t.Errorf("nothing was staged: %d pinned buffers, %d copies", dev.PinnedAllocs, dev.Copies)
			}
			if dev.PinnedLive != 0 {
				t.Errorf("%d pinned buffers of %d left unfreed after the worlds closed", dev.PinnedLive, dev.PinnedAllocs)
			}
		})
	}
}

func memWorld(t testing.TB, name string, n int) []collective.Comm {
	mem := transport.NewMemWorld(n, transport.MemOptions{})
	store := rendezvous.NewMemStore()
	comms := make([]collective.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			var tr driver.Transport = mem[r]
			comms[r], errs[r] = collective.New(context.Background(), name, collective.Config{
				Rank: r, Size: n, Transport: tr, Store: store, Timeout: 2 * time.Minute,
				Options: map[string]string{"chunk": "4KiB"}, JobID: "device-test", Token: []byte("device-test-token"),
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return comms
}
