package ps_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/transport"
)

// local_agg=1 (a host's ranks reduce among themselves before the push)
// passes the short suite on hosts of two ranks and on one host of three
// beside hosts of one: with colocated servers over the mesh and over gRPC,
// and with dedicated servers (each a host of its own, as on a cluster's
// CPU nodes).
func TestConformanceLocalAgg(t *testing.T) {
	layouts := []struct {
		name string
		host func(r int) string
	}{
		{"pairs", func(r int) string { return fmt.Sprint("h", r/2) }},
		{"3+1s", func(r int) string { return fmt.Sprint("h", max(0, r-2)) }},
	}
	for _, servers := range []struct {
		name string
		opts map[string]string
	}{
		{"colocated", nil},
		{"colocated/grpc", map[string]string{"transport": "grpc"}},
		{"dedicated", map[string]string{"placement": "dedicated", "servers": "2"}},
	} {
		for _, layout := range layouts {
			t.Run(servers.name+"/"+layout.name, func(t *testing.T) {
				opts := testOptions(map[string]string{"local_agg": "1"})
				maps.Copy(opts, servers.opts)
				collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
					if opts["placement"] == "dedicated" {
						host := func(r int) string {
							if r >= n {
								return fmt.Sprint("server", r-n)
							}
							return layout.host(r)
						}
						return dedicatedWorldOn(t, n, host, opts, time.Minute).comms
					}
					hosts := make([]string, n)
					for r := range hosts {
						hosts[r] = layout.host(r)
					}
					mem := transport.NewMemWorld(n, transport.MemOptions{MaxDelay: 20_000, Seed: 11 * uint64(n), Hosts: hosts})
					trs := make([]driver.Transport, n)
					for r := range trs {
						trs[r] = mem[r]
					}
					return colocatedWorldOver(t, newMemStore(), trs, opts, time.Minute)
				}, collectivetest.Options{WorldSizes: []int{1, 2, 3, 4, 5}, Short: true})
			})
		}
	}
}

// hostCounter counts the payload bytes its rank sends to other hosts.
type hostCounter struct {
	*transport.Mem
	cross *atomic.Int64
}

func (x hostCounter) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	if x.HostOf(peer) != x.HostOf(x.Rank()) {
		x.cross.Add(int64(len(data)))
	}
	return x.Mem.Send(ctx, peer, tag, data)
}

// On 2 hosts × 2 ranks, each rank serving a quarter of every tensor, a
// plain allreduce makes each host send 2 S to the other (each worker
// pushes the half of its tensor that the other host serves, and the
// host's servers send each of the other's workers its half back); with
// local_agg=1 each host pushes and pulls one contribution, not two: S.
// (Message headers ride on both, under 0.1%.)
func TestLocalAggCrossHostBytes(t *testing.T) {
	const count = 1 << 18
	const size = 4 * count
	for _, tc := range []struct {
		agg  string
		want float64
	}{{"0", 2 * 2 * size}, {"1", 2 * size}} { // both hosts' sends
		t.Run("local_agg="+tc.agg, func(t *testing.T) {
			mem := transport.NewMemWorld(4, transport.MemOptions{Hosts: []string{"a", "a", "b", "b"}})
			var cross atomic.Int64
			trs := make([]driver.Transport, 4)
			for r := range trs {
				trs[r] = hostCounter{mem[r], &cross}
			}
			comms := colocatedWorldOver(t, newMemStore(), trs, map[string]string{"local_agg": tc.agg}, time.Minute)
			errs := make([]error, 4)
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Go(func() {
					errs[r] = c.AllReduce(t.Context(), collective.NewTensor(collective.Float32, count), collective.Sum)
				})
			}
			wg.Wait()
			for _, c := range comms {
				c.Close()
			}
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			if d := float64(cross.Load())/tc.want - 1; d > 0.01 || d < -0.01 {
				t.Errorf("%d bytes crossed hosts, want %.0f ± 1%%", cross.Load(), tc.want)
			}
		})
	}
}
