package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/kernels"
	"github.com/distbench/distbench/internal/linkspec"
)

// Both transports promise the same semantics; these checks run against each.
func TestTransportConformance(t *testing.T) {
	worlds := map[string]func(t *testing.T, n int) []driver.Transport{
		"mem": func(t *testing.T, n int) []driver.Transport {
			ms := NewMemWorld(n, MemOptions{MaxDelay: 200 * time.Microsecond, Seed: 1})
			trs := make([]driver.Transport, n)
			for i, m := range ms {
				trs[i] = m
			}
			t.Cleanup(func() {
				for _, m := range ms {
					m.Close()
				}
			})
			return trs
		},
		"tcp": func(t *testing.T, n int) []driver.Transport {
			m := newMesh(t, n, nil)
			trs := make([]driver.Transport, n)
			for i, tr := range m.ts {
				trs[i] = tr
			}
			return trs
		},
		// Readers and writers that poll their sockets instead of parking
		// (TCPOptions.Spin), as the local launcher sets them up when each
		// process has a core.
		"tcp-spin": func(t *testing.T, n int) []driver.Transport {
			m := newMesh(t, n, func(rank int, o *TCPOptions) { o.Spin = time.Millisecond })
			trs := make([]driver.Transport, n)
			for i, tr := range m.ts {
				trs[i] = tr
			}
			return trs
		},
		// Same-host pairs in shared memory (TCPOptions.Transport), every
		// message through the ring, or large ones read by CMA.
		"shm":      shmWorld(func(rank int, o *TCPOptions) {}),
		"shm-cma":  shmWorld(func(rank int, o *TCPOptions) { o.cmaFrom = shmCMATest }),
		"shm-spin": shmWorld(func(rank int, o *TCPOptions) { o.Spin = time.Millisecond }),
		// The smallest rings, those of a host crowded with ranks.
		"shm-small": shmWorld(func(rank int, o *TCPOptions) { o.ringSize = 16 << 10 }),
		// Ranks 0 and 1 on one host, the rest on another: shared memory
		// and TCP in one mesh.
		"shm-mixed": shmWorld(func(rank int, o *TCPOptions) { o.HostID = fmt.Sprint("host", min(rank, 2)/2) }),
	}
	for name, newWorld := range worlds {
		t.Run(name, func(t *testing.T) {
			t.Run("all pairs, FIFO per tag", func(t *testing.T) { conformFIFO(t, newWorld(t, 3)) })
			t.Run("mismatch", func(t *testing.T) { conformMismatch(t, newWorld(t, 2)) })
			t.Run("timeout", func(t *testing.T) { conformTimeout(t, newWorld(t, 2)) })
			t.Run("abort", func(t *testing.T) { conformAbort(t, newWorld(t, 3)) })
			t.Run("close", func(t *testing.T) { conformClose(t, newWorld(t, 2)) })
			t.Run("reduce receive", func(t *testing.T) { conformReduce(t, newWorld(t, 2)) })
		})
	}
}

func conformFIFO(t *testing.T, trs []driver.Transport) {
	ctx := ctxFor(t, 20*time.Second)
	const count = 20
	var wg sync.WaitGroup
	for src := range trs {
		for dst := range trs {
			if src == dst {
				continue
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range count {
					msg := fmt.Appendf(nil, "%d>%d#%02d", src, dst, i)
					if err := trs[src].Send(ctx, dst, uint64(i%2), msg); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				for _, tag := range []uint64{1, 0} { // drain odd first: tags are independent
					for i := int(tag); i < count; i += 2 {
						want := fmt.Sprintf("%d>%d#%02d", src, dst, i)
						got := make([]byte, len(want))
						if err := trs[dst].Recv(ctx, src, tag, got); err != nil || string(got) != want {
							t.Errorf("Recv: %q, %v; want %q", got, err, want)
							return
						}
					}
				}
			}()
		}
	}
	wg.Wait()
}

func conformMismatch(t *testing.T, trs []driver.Transport) {
	ctx := ctxFor(t, 10*time.Second)
	if err := trs[0].Send(ctx, 1, 0, make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	err := trs[1].Recv(ctx, 0, 0, make([]byte, 4))
	var me *collective.MismatchError
	if !errors.As(err, &me) || me.Want != 4 || me.Got != 3 {
		t.Errorf("got %v, want a MismatchError of 4 vs 3", err)
	}
}

func conformTimeout(t *testing.T, trs []driver.Transport) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := trs[0].Recv(ctx, 1, 0, make([]byte, 1))
	if !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("got %v, want a timeout naming rank 1", err)
	}
}

func conformAbort(t *testing.T, trs []driver.Transport) {
	ctx := ctxFor(t, 10*time.Second)
	errc := make(chan error, 2)
	go func() { errc <- trs[0].Recv(ctx, 2, 0, make([]byte, 1)) }() // from a bystander
	go func() { errc <- trs[2].Recv(ctx, 1, 0, make([]byte, 1)) }() // from the aborter
	time.Sleep(20 * time.Millisecond)
	trs[1].Abort(errors.New("out of memory"))
	for range 2 {
		err := <-errc
		var pe *collective.PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 || !strings.Contains(err.Error(), "aborted: out of memory") {
			t.Errorf("got %v, want rank 1's abort", err)
		}
	}
}

func conformClose(t *testing.T, trs []driver.Transport) {
	ctx := ctxFor(t, 10*time.Second)
	errc := make(chan error, 1)
	go func() { errc <- trs[0].Recv(ctx, 1, 0, make([]byte, 1)) }()
	time.Sleep(20 * time.Millisecond)
	trs[0].Close()
	if err := <-errc; !errors.Is(err, collective.ErrClosed) {
		t.Errorf("pending receive: %v, want ErrClosed", err)
	}
	if err := trs[0].Send(ctx, 1, 0, []byte("x")); !errors.Is(err, collective.ErrClosed) {
		t.Errorf("send after Close: %v, want ErrClosed", err)
	}
}

// conformReduce: a reduce receive leaves buf op message in buf, whether it
// was posted before the message arrived (reduced as it is read) or after
// (reduced out of the unexpected queue), at sizes around the TCP reader's
// buffer.
func conformReduce(t *testing.T, trs []driver.Transport) {
	ctx := ctxFor(t, 20*time.Second)
	rp := trs[1]
	tag := uint64(0)
	for _, dt := range []collective.DType{collective.Float32, collective.BFloat16, collective.Int64} {
		for _, count := range []int{0, 1, 1000, 64<<10/dt.Size() + 3, 1<<20/dt.Size() + 5} {
			for _, early := range []bool{true, false} {
				tag++
				t.Run(fmt.Sprintf("%s/%d/posted early %v", dt, count, early), func(t *testing.T) {
					mine, theirs := collective.NewTensor(dt, count), collective.NewTensor(dt, count)
					for i := range count {
						mine.SetFloat64(i, float64(i%7))
						theirs.SetFloat64(i, float64(i%5+1))
					}
					want := append([]byte(nil), mine.Data...)
					kernels.Reduce(dt, collective.Max, want, theirs.Data)
					var rv driver.Posted
					var err error
					if early {
						if rv, err = rp.PostRecvReduce(0, tag, mine.Data, kernels.Reduction(dt, collective.Max)); err != nil {
							t.Fatal(err)
						}
					}
					if err := trs[0].Send(ctx, 1, tag, theirs.Data); err != nil {
						t.Fatal(err)
					}
					if !early {
						// Let the message arrive first.
						time.Sleep(20 * time.Millisecond)
						if rv, err = rp.PostRecvReduce(0, tag, mine.Data, kernels.Reduction(dt, collective.Max)); err != nil {
							t.Fatal(err)
						}
					}
					if err := rv.Wait(ctx); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(mine.Data, want) {
						t.Fatalf("buffer after the reduce receive differs from buf max message")
					}
				})
			}
		}
	}
}

// shmCMATest is the CMA threshold of tests that exercise it.
const shmCMATest = 64 << 10

// shmWorld is a TCP mesh with Transport auto, tweaked.
func shmWorld(tweak func(rank int, o *TCPOptions)) func(t *testing.T, n int) []driver.Transport {
	return func(t *testing.T, n int) []driver.Transport {
		m := newMesh(t, n, func(rank int, o *TCPOptions) {
			o.Transport = linkspec.TransportAuto
			o.HostID = "test-host"
			tweak(rank, o)
		})
		trs := make([]driver.Transport, n)
		for i, tr := range m.ts {
			trs[i] = tr
			for j := range n {
				want := linkspec.TransportShm
				if j == i {
					continue
				} else if tr.HostOf(i) != tr.HostOf(j) {
					want = linkspec.TransportTCP
				}
				if got := tr.PathTo(j); got != want && linkspec.ShmSupported {
					t.Fatalf("rank %d to %d: path %q, want %q", i, j, got, want)
				}
			}
		}
		return trs
	}
}
