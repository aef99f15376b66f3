package collectivetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
)

// NewWorld builds an n-rank world of one strategy, rank i at index i. The
// suite closes the communicators when it is done with them.
type NewWorld func(t testing.TB, n int) []collective.Comm

// Options narrow the suite, for strategies that cannot run all of it.
type Options struct {
	WorldSizes []int // default 1, 2, 3, 4, 5, 7, 8
	// Unsupported lists operations the strategy answers with ErrUnsupported;
	// the suite checks that it does so, instead of their results.
	Unsupported []string
	// Short runs fewer counts and dtypes (for slow transports).
	Short bool
}

// DefaultWorldSizes are the world sizes the suite runs.
var DefaultWorldSizes = []int{1, 2, 3, 4, 5, 7, 8}

// LargeCount is the "large" count: over a million elements, odd, so that it
// splits unevenly over every world size.
const LargeCount = 1<<20 + 3

// Run runs the conformance suite.
func Run(t *testing.T, newWorld NewWorld, opts ...Options) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	sizes := o.WorldSizes
	if len(sizes) == 0 {
		sizes = DefaultWorldSizes
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("np=%d", n), func(t *testing.T) {
			comms := newWorld(t, n)
			if len(comms) != n {
				t.Fatalf("newWorld(%d) returned %d communicators", n, len(comms))
			}
			defer func() {
				for _, c := range comms {
					c.Close()
				}
			}()
			w := &world{t: t, comms: comms, n: n, o: o}
			for _, tc := range cases() {
				t.Run(tc.name, func(t *testing.T) {
					w.t = t
					if slices.Contains(o.Unsupported, tc.name) {
						w.expectUnsupported(tc)
						return
					}
					tc.run(w)
				})
			}
		})
	}
}

type world struct {
	t     testing.TB
	comms []collective.Comm
	n     int
	o     Options
}

// counts are the element counts each data case runs at.
func (w *world) counts() []int {
	n := w.n
	cs := []int{0, 1, n - 1, n + 1, 1009, 4 * n}
	if w.o.Short {
		cs = []int{0, 1, n + 1, 1009}
	}
	slices.Sort(cs)
	return slices.Compact(cs)
}

// dtypes are the element types the reductions run at: every type, whose
// arithmetic each strategy must get right (Short: one of each kind, the
// narrowest float included).
func (w *world) dtypes() []collective.DType {
	if w.o.Short {
		return []collective.DType{collective.Float32, collective.BFloat16, collective.Int64, collective.Int8, collective.Float8E5M2}
	}
	return collective.DTypes()
}

// copyDTypes are the element types the collectives that only move data run
// at: one of each element size (1, 2, 4 and 8 bytes) and kind is all a
// copy can tell apart, so the types nccl-tests added (int8, uint32,
// uint64, fp8), whose sizes these share, would only repeat them.
func (w *world) copyDTypes() []collective.DType {
	if w.o.Short {
		return []collective.DType{collective.Float32, collective.BFloat16, collective.Int64}
	}
	return []collective.DType{collective.Float32, collective.Float64, collective.Float16, collective.BFloat16, collective.Int32, collective.Int64, collective.Uint8}
}

// each runs fn on every rank concurrently and fails the test on any error.
func (w *world) each(fn func(ctx context.Context, r int, c collective.Comm) error) {
	w.t.Helper()
	if err := w.eachErr(fn); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) eachErr(fn func(ctx context.Context, r int, c collective.Comm) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make([]error, w.n)
	var wg sync.WaitGroup
	for r, c := range w.comms {
		wg.Go(func() {
			if err := fn(ctx, r, c); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

type testCase struct {
	name string
	run  func(w *world)
	// unsupported issues the operation once, for strategies that refuse it.
	unsupported func(ctx context.Context, c collective.Comm) error
}

func (w *world) expectUnsupported(tc testCase) {
	if tc.unsupported == nil {
		w.t.Fatalf("case %s cannot be declared unsupported", tc.name)
	}
	w.each(func(ctx context.Context, r int, c collective.Comm) error {
		err := tc.unsupported(ctx, c)
		if w.n > 1 && !errors.Is(err, collective.ErrUnsupported) {
			return fmt.Errorf("want ErrUnsupported, got %v", err)
		}
		return nil
	})
}

func cases() []testCase {
	return []testCase{
		{name: "allreduce", run: testAllReduce,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.AllReduce(ctx, collective.NewTensor(collective.Float32, 8), collective.Sum)
			}},
		{name: "allreduce-large", run: testAllReduceLarge},
		{name: "reduce", run: testReduce,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.Reduce(ctx, collective.NewTensor(collective.Float32, 8), 0, collective.Sum)
			}},
		{name: "broadcast", run: testBroadcast,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.Broadcast(ctx, collective.NewTensor(collective.Float32, 8), 0)
			}},
		{name: "allgather", run: testAllGather,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.AllGather(ctx, collective.NewTensor(collective.Float32, 8*c.Size()), collective.NewTensor(collective.Float32, 8))
			}},
		{name: "reducescatter", run: testReduceScatter,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.ReduceScatter(ctx, collective.NewTensor(collective.Float32, 8), collective.NewTensor(collective.Float32, 8*c.Size()), collective.Sum)
			}},
		{name: "gather", run: testGather,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.Gather(ctx, collective.NewTensor(collective.Float32, 8*c.Size()), collective.NewTensor(collective.Float32, 8), 0)
			}},
		{name: "scatter", run: testScatter,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.Scatter(ctx, collective.NewTensor(collective.Float32, 8), collective.NewTensor(collective.Float32, 8*c.Size()), 0)
			}},
		{name: "alltoall", run: testAllToAll,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				return c.AllToAll(ctx, collective.NewTensor(collective.Float32, 8*c.Size()), collective.NewTensor(collective.Float32, 8*c.Size()))
			}},
		{name: "barrier", run: testBarrier,
			unsupported: func(ctx context.Context, c collective.Comm) error { return c.Barrier(ctx) }},
		{name: "sendrecv", run: testSendRecv,
			unsupported: func(ctx context.Context, c collective.Comm) error {
				if c.Size() < 2 {
					return collective.ErrUnsupported
				}
				t := collective.NewTensor(collective.Float32, 8)
				peer := (c.Rank() + 1) % c.Size()
				from := (c.Rank() - 1 + c.Size()) % c.Size()
				s, rv := c.ISend(ctx, t, peer, 0), c.IRecv(ctx, t, from, 0)
				return errors.Join(s.Wait(ctx), rv.Wait(ctx))
			}},
		{name: "async-order", run: testAsyncOrder},
		{name: "groups", run: testGroups},
		{name: "invalid-args", run: testInvalidArgs},
	}
}
