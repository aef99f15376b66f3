package tree

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/internal/units"
)

// The benchmarks that chose autoMaxRD and DefaultChunk. Every rank is a
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
	store := &benchStore{m: map[string][]byte{}, changed: make(chan struct{})}
	comms := make([]collective.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			tr, err := transport.NewTCP(context.Background(), transport.TCPOptions{
				Rank: r, Size: n, Store: store, JobID: "tree-bench", Token: []byte("tree-bench"),
				ConnectTimeout: 10 * time.Second,
			})
			if err != nil {
				errs[r] = err
				return
			}
			comms[r], errs[r] = collective.New(context.Background(), Name,
				collective.Config{Rank: r, Size: n, Transport: tr, Options: opts})
		})
	}
	wg.Wait()
	b.Cleanup(func() {
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
			b.Fatalf("rank %d: %v", r, err)
		}
	}
	return comms
}

// benchStore is a collective.Store in memory, standing in for the
// rendezvous server.
type benchStore struct {
	mu      sync.Mutex
	m       map[string][]byte
	changed chan struct{} // closed and replaced on every change
}

func (s *benchStore) set(key string, v []byte) {
	s.m[key] = v
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *benchStore) Set(ctx context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(key, append([]byte(nil), value...))
	return nil
}

func (s *benchStore) Get(ctx context.Context, key string) ([]byte, error) {
	for {
		s.mu.Lock()
		v, ok := s.m[key]
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return append([]byte(nil), v...), nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *benchStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := strconv.ParseInt(string(s.m[key]), 10, 64)
	n += delta
	s.set(key, []byte(strconv.FormatInt(n, 10)))
	return n, nil
}

func (s *benchStore) Wait(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if _, err := s.Get(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

func (s *benchStore) Close() error { return nil }

var _ collective.Store = (*benchStore)(nil)
