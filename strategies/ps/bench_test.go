package ps_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/transport"
	_ "github.com/distbench/distbench/strategies/ring" // the yardstick
)

// benchAllReduce times a float32 allreduce of size bytes on every rank at
// once, after a warm-up, and reports nccl-tests' busbw (GB/s, 1e9 bytes).
func benchAllReduce(b *testing.B, comms []collective.Comm, size int) {
	n := len(comms)
	tensors := make([]collective.Tensor, n)
	for r := range tensors {
		tensors[r] = collective.NewTensor(collective.Float32, size/4)
	}
	round := func() {
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Go(func() {
				if err := c.AllReduce(context.Background(), tensors[r], collective.Sum); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	for range 2 {
		round()
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		round()
	}
	per := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(size)/per*2*float64(n-1)/float64(n), "busbw-B/s")
}

// tcpWorld builds a world of strategy over the TCP mesh on loopback, with
// options opts.
func tcpWorld(b *testing.B, strategy string, n int, opts map[string]string) []collective.Comm {
	store := newMemStore()
	comms := make([]collective.Comm, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			tr, err := transport.NewTCP(context.Background(), transport.TCPOptions{
				Rank: r, Size: n, Store: store, JobID: testJob, Token: testToken,
			})
			if err != nil {
				b.Error(err)
				return
			}
			c, err := collective.New(context.Background(), strategy, collective.Config{
				Rank: r, Size: n, Transport: tr, Store: store, Options: opts, JobID: testJob, Token: testToken,
			})
			if err != nil {
				b.Error(err)
				return
			}
			comms[r] = c
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return comms
}

// BenchmarkAllReduce compares, at np 2, the parameter server (colocated,
// over the TCP mesh and over gRPC on loopback; both placements over the
// in-memory mesh) with the ring over the same meshes, workers and servers
// all in this process. distbench itself (bench/ps-transport.sh) measures
// them as separate processes, as a job runs.
func BenchmarkAllReduce(b *testing.B) {
	const n = 2
	for _, size := range []int{64 << 20, 1 << 20} {
		for _, s := range []struct {
			name  string
			world func(b *testing.B) []collective.Comm
		}{
			{"ps-tcp", func(b *testing.B) []collective.Comm { return tcpWorld(b, "ps", n, nil) }},
			{"ps-grpc", func(b *testing.B) []collective.Comm {
				return tcpWorld(b, "ps", n, map[string]string{"transport": "grpc"})
			}},
			{"ps-colocated-mem", func(b *testing.B) []collective.Comm { return colocatedWorld(b, n, nil, time.Minute) }},
			{"ps-dedicated-mem", func(b *testing.B) []collective.Comm { return dedicatedWorld(b, n, nil, time.Minute).comms }},
			{"ring-mem", func(b *testing.B) []collective.Comm {
				trs := transport.NewMemWorld(n, transport.MemOptions{})
				comms := make([]collective.Comm, n)
				for r := range n {
					c, err := collective.New(context.Background(), "ring", collective.Config{Rank: r, Size: n, Transport: trs[r]})
					if err != nil {
						b.Fatal(err)
					}
					comms[r] = c
				}
				return comms
			}},
			{"ring-tcp", func(b *testing.B) []collective.Comm { return tcpWorld(b, "ring", n, nil) }},
		} {
			b.Run(fmt.Sprintf("%s/np=%d/%dMiB", s.name, n, size>>20), func(b *testing.B) {
				comms := s.world(b)
				defer closeAll(comms)
				benchAllReduce(b, comms, size)
			})
		}
	}
}
