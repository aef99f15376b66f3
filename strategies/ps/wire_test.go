package ps_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
)

// The bytes a parameter server's allreduce really moves, over the mesh and
// over gRPC, are what its schedule predicts (over the mesh, within its
// request headers' 1%). Colocated, each worker pushes the shards it does
// not host and pulls them back, and its server receives the others' pushes
// for its shard and serves their pulls: 2(n−1)/n × S each way, as a ring,
// with the local shard's calls moving nothing. Dedicated, each worker
// pushes and pulls all of S, and each server receives and sends n shards.
func TestWireBytes(t *testing.T) {
	const n, count = 4, 1 << 20 // 4 MiB of float32 over 4 servers
	const size = 4 * count
	shard := float64(size) / n
	for _, tc := range []struct{ placement, transport string }{
		{"colocated", "mesh"}, {"dedicated", "mesh"}, {"colocated", "grpc"}, {"dedicated", "grpc"},
	} {
		placement, opts := tc.placement, map[string]string{"transport": tc.transport}
		t.Run(placement+"/"+tc.transport, func(t *testing.T) {
			var comms []collective.Comm
			if placement == "colocated" {
				comms = colocatedWorld(t, n, opts, time.Minute)
			} else {
				comms = dedicatedWorld(t, n, opts, time.Minute).comms
			}
			defer closeAll(comms)
			before := make([]collective.WireBytes, n)
			for r, c := range comms {
				before[r] = c.(collective.WireCounter).WireBytes()
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Go(func() {
					errs[r] = c.AllReduce(t.Context(), collective.NewTensor(collective.Float32, count), collective.Sum)
				})
			}
			wg.Wait()
			servers := make([]collective.WireBytes, n)
			for r, c := range comms {
				if errs[r] != nil {
					t.Fatalf("rank %d: %v", r, errs[r])
				}
				w := c.(collective.WireCounter).WireBytes()
				want := 2 * (n - 1) * shard
				if placement == "dedicated" {
					want = size
				}
				check(t, fmt.Sprintf("rank %d sent", r), float64(w.Sent-before[r].Sent), want)
				check(t, fmt.Sprintf("rank %d received", r), float64(w.Recv-before[r].Recv), want)
				if placement == "colocated" && w.Servers != nil {
					t.Errorf("rank %d: per-server bytes %v without dedicated servers", r, w.Servers)
				}
				if placement == "dedicated" {
					if len(w.Servers) != n {
						t.Fatalf("rank %d: %d servers' bytes, want %d", r, len(w.Servers), n)
					}
					for i, s := range w.Servers {
						servers[i].Sent += s.Sent - before[r].Servers[i].Sent
						servers[i].Recv += s.Recv - before[r].Servers[i].Recv
					}
				}
			}
			if placement == "dedicated" {
				for i, s := range servers {
					check(t, fmt.Sprintf("server %d sent", i), float64(s.Sent), n*shard)
					check(t, fmt.Sprintf("server %d received", i), float64(s.Recv), n*shard)
				}
			}
		})
	}
}

func check(t *testing.T, what string, got, want float64) {
	t.Helper()
	if d := got/want - 1; d > 0.01 || d < -0.01 {
		t.Errorf("%s %.0f bytes, want %.0f ± 1%%", what, got, want)
	}
}
