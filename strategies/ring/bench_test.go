package ring_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
)

// tcpWorld builds an n-rank ring world over real loopback TCP in one process.
func tcpWorld(b testing.TB, n int, opts map[string]string) []collective.Comm {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := rendezvous.Listen("127.0.0.1:0", rendezvous.ServerOptions{JobID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	comms := make([]collective.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			store, err := rendezvous.Dial(ctx, srv.Addr(), rendezvous.ClientOptions{JobID: "bench"})
			if err != nil {
				errs[r] = err
				return
			}
			tr, err := transport.NewTCP(ctx, transport.TCPOptions{Rank: r, Size: n, Store: store, JobID: "bench", Token: []byte("t")})
			if err != nil {
				errs[r] = err
				return
			}
			comms[r], errs[r] = collective.New(ctx, "ring", collective.Config{Rank: r, Size: n, Transport: tr, Options: opts})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	return comms
}

// BenchmarkAllReduceTCP is ring allreduce between ranks in one process over
// loopback TCP: the strategy and transport without process start-up, for
// profiling. `distbench run` measures the same across processes.
func BenchmarkAllReduceTCP(b *testing.B) {
	for _, np := range []int{2, 4} {
		for _, size := range []int{4 << 10, 16 << 20} {
			b.Run(fmt.Sprintf("np=%d/bytes=%d", np, size), func(b *testing.B) {
				comms := tcpWorld(b, np, nil)
				ts := make([]collective.Tensor, np)
				for r := range ts {
					ts[r] = collective.NewTensor(collective.Float32, size/4)
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				var wg sync.WaitGroup
				for r := 1; r < np; r++ {
					wg.Go(func() {
						for range b.N {
							if err := comms[r].AllReduce(context.Background(), ts[r], collective.Sum); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				for range b.N {
					if err := comms[0].AllReduce(context.Background(), ts[0], collective.Sum); err != nil {
						b.Fatal(err)
					}
				}
				wg.Wait()
			})
		}
	}
}
