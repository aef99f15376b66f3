package tree

import (
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
	return collectivetest.TCPWorld(t, Name, n, opts, func(_ int, o *transport.TCPOptions) {
		o.Transport, o.HostID = linkspec.TransportShm, "one-host"
	})
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
