package ring_test

import (
	"fmt"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/transport"
)

// shmWorld connects n ranks through the TCP mesh with every pair in shared
// memory (transport "shm", all ranks on one host); the test's cleanup
// closes them.
func shmWorld(t testing.TB, n int, opts map[string]string) []collective.Comm {
	return meshWorld(t, n, opts, linkspec.TransportShm, func(int) string { return "one-host" })
}

// meshWorld is shmWorld with a transport and each rank's host.
func meshWorld(t testing.TB, n int, opts map[string]string, tr string, host func(rank int) string) []collective.Comm {
	return collectivetest.TCPWorld(t, "ring", n, opts, func(r int, o *transport.TCPOptions) { o.Transport, o.HostID = tr, host(r) })
}

// The short suite over shared memory: the ring and CMA paths of the
// transport under the engine's posted and reducing receives.
func TestConformanceShm(t *testing.T) {
	if !linkspec.ShmSupported {
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
		return meshWorld(t, n, map[string]string{"chunk": "64KiB"}, linkspec.TransportAuto, func(r int) string { return fmt.Sprint("host", r%2) })
	}, collectivetest.Options{Short: true, WorldSizes: []int{3, 4, 5}})
}
