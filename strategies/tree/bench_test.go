package tree

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/internal/units"
)

// The benchmarks that chose shapes.TreeAutoMaxRD and TreeDefaultChunk. Every rank is a
// goroutine of this process; BenchmarkAllReduceTCP connects them through the
// TCP mesh over loopback, BenchmarkAllReduceMem through the in-memory
// transport. The time per op is that of b.N back-to-back allreduces on every
// rank, as nccl-tests times them:
//
//	go test ./strategies/tree/ -run '^$' -bench 'AllReduceTCP' -count 5 | tee tcp.txt
//	benchstat -col /algo tcp.txt

// benchSizes are the allreduce sizes compared, in bytes of float32.
var benchSizes = []int{1 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}

func BenchmarkAllReduceTCP(b *testing.B) { benchAllReduce(b, tcpWorld) }

func BenchmarkAllReduceMem(b *testing.B) {
	benchAllReduce(b, func(b *testing.B, n int, opts map[string]string) []collective.Comm {
		trs := transport.NewMemWorld(n, transport.MemOptions{})
		comms := make([]collective.Comm, n)
		for r := range n {
			c, err := collective.New(b.Context(), Name, collective.Config{Rank: r, Size: n, Transport: trs[r], Options: opts})
			if err != nil {
				b.Fatal(err)
			}
			comms[r] = c
		}
		return comms
	})
}

// BenchmarkChunkTCP compares pipeline chunk sizes for the double binary tree
// on large buffers.
func BenchmarkChunkTCP(b *testing.B) {
	for _, n := range []int{4, 8} {
		for _, chunk := range []string{"64KiB", "256KiB", "1MiB", "4MiB"} {
			for _, size := range []int{4 << 20, 16 << 20} {
				b.Run(fmt.Sprintf("np=%d/chunk=%s/size=%s", n, chunk, units.FormatBytes(int64(size))), func(b *testing.B) {
					comms := tcpWorld(b, n, map[string]string{"algo": "dbtree", "chunk": chunk})
					runAllReduce(b, comms, size)
				})
			}
		}
	}
}

// benchAllReduce runs rd and dbtree one after the other at each size, so
// that both see the same load on a shared machine.
func benchAllReduce(b *testing.B, newWorld func(b *testing.B, n int, opts map[string]string) []collective.Comm) {
	for _, n := range []int{4, 8} {
		algos := []string{"rd", "dbtree"}
		worlds := map[string][]collective.Comm{}
		for _, algo := range algos {
			worlds[algo] = newWorld(b, n, map[string]string{"algo": algo})
		}
		for _, size := range benchSizes {
			for _, algo := range algos {
				b.Run(fmt.Sprintf("np=%d/size=%s/algo=%s", n, units.FormatBytes(int64(size)), algo), func(b *testing.B) {
					runAllReduce(b, worlds[algo], size)
				})
			}
		}
	}
}

// runAllReduce times b.N allreduces of size bytes on every rank at once.
func runAllReduce(b *testing.B, comms []collective.Comm, size int) {
	ctx := context.Background()
	ts := make([]collective.Tensor, len(comms))
	for r := range comms {
		ts[r] = collective.NewTensor(collective.Float32, size/4)
	}
	each := func(iters int) {
		var wg sync.WaitGroup
		errs := make([]error, len(comms))
		for r, c := range comms {
			wg.Go(func() {
				for range iters {
					if err := c.AllReduce(ctx, ts[r], collective.Sum); err != nil {
						errs[r] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	each(2) // warm up: scratch buffers, connections
	b.SetBytes(int64(size))
	b.ResetTimer()
	each(b.N)
}

// tcpWorld connects n ranks through the TCP mesh over loopback; the
// benchmark's cleanup closes them.
func tcpWorld(b *testing.B, n int, opts map[string]string) []collective.Comm {
	return collectivetest.TCPWorld(b, Name, n, opts, nil)
}
