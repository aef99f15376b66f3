package tree

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/shapes"
	"github.com/distbench/distbench/internal/transport"
)

// memWorld builds an n-rank tree world over the in-memory transport, with
// seeded delays so that messages arrive in varying orders.
func memWorld(t testing.TB, n int, opts map[string]string) []collective.Comm {
	return collectivetest.MemWorld(t, Name, n, opts, transport.MemOptions{MaxDelay: 20_000, Seed: 11 * uint64(n)})
}

// The algorithms differ only in allreduce. The double binary tree and auto
// (recursive doubling for every count of the suite but the large one) run
// the whole suite, recursive doubling alone its short form. A small chunk
// makes even modest counts go through the pipeline and its window.
//
// With -short, only the double binary tree runs the whole suite (auto runs
// the same code as the other two). With -race, the double binary tree and
// recursive doubling run the short suite and auto none: that takes every
// code path of this package (every operation, counts 0, 1, n+1, 1009 and a
// million, in and out of place), and what the full suite adds, more dtypes
// and counts, exercises collective's arithmetic rather than this package's
// concurrency, at several times the cost under the race detector.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		algo  string
		short bool
	}{{"dbtree", raceEnabled}, {"rd", true}, {"auto", testing.Short()}} {
		t.Run("algo="+tc.algo, func(t *testing.T) {
			if tc.algo == "auto" && raceEnabled {
				t.Skip("auto runs the code of dbtree and rd, which the race detector has checked")
			}
			collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
				return memWorld(t, n, map[string]string{"algo": tc.algo, "chunk": "4KiB"})
			}, collectivetest.Options{Short: tc.short})
		})
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string // "" when valid, else a part of the error
	}{
		{nil, ""},
		{map[string]string{"algo": "dbtree"}, ""},
		{map[string]string{"algo": "rd", "chunk": "64KiB"}, ""},
		{map[string]string{"algo": "auto"}, ""},
		{map[string]string{"algo": "ring"}, "accepted: auto, dbtree, rd"},
		{map[string]string{"chunk": "8"}, "out of range"},
		{map[string]string{"chunk": "lots"}, "malformed size"},
		{map[string]string{"depth": "3"}, "accepted: algo, chunk"},
	} {
		_, err := collective.New(t.Context(), Name, collective.Config{Rank: 0, Size: 1, Options: tc.opts})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("options %v: %v", tc.opts, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("options %v: err = %v, want one containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestAllReduceAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		size int
		want string
	}{
		{nil, 0, "rd"},
		{nil, shapes.TreeAutoMaxRD, "rd"},
		{nil, shapes.TreeAutoMaxRD + 1, "dbtree"},
		{map[string]string{"algo": "auto"}, 1 << 20, "dbtree"},
		{map[string]string{"algo": "rd"}, 1 << 20, "rd"},
		{map[string]string{"algo": "dbtree"}, 4, "dbtree"},
		{map[string]string{"algo": "hier", "inter": "rd"}, 1 << 20, "hier"},
		{map[string]string{"chunk": "64KiB"}, 64 << 10, "dbtree"},
	} {
		got, err := AllReduceAlgorithm(tc.opts, tc.size)
		if err != nil || got != tc.want {
			t.Errorf("AllReduceAlgorithm(%v, %d) = %q, %v; want %q", tc.opts, tc.size, got, err, tc.want)
		}
	}
	if _, err := AllReduceAlgorithm(map[string]string{"algo": "bogus"}, 4); err == nil {
		t.Error("AllReduceAlgorithm accepted algo=bogus")
	}
}

func TestPick(t *testing.T) {
	a := &algorithms{algo: algoAuto}
	if a.pick(shapes.TreeAutoMaxRD) != algoRD || a.pick(shapes.TreeAutoMaxRD+1) != algoDBTree {
		t.Errorf("auto switches at the wrong size: %d bytes → %v, %d → %v",
			shapes.TreeAutoMaxRD, a.pick(shapes.TreeAutoMaxRD), shapes.TreeAutoMaxRD+1, a.pick(shapes.TreeAutoMaxRD+1))
	}
	for _, forced := range []algo{algoRD, algoDBTree} {
		a := &algorithms{algo: forced}
		if a.pick(0) != forced || a.pick(1<<30) != forced {
			t.Errorf("algo=%v not obeyed", forced)
		}
	}
}

// A rank that never joins an operation makes the others fail by their
// deadline with an error that names the operation, where in it they were
// and the rank they were waiting for.
func TestErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct {
		algo, want, opName string
		op                 func(ctx context.Context, c collective.Comm) error
	}{
		{"dbtree", "dbtree tree", "allreduce", func(ctx context.Context, c collective.Comm) error {
			return c.AllReduce(ctx, collective.NewTensor(collective.Float32, 1000), collective.Sum)
		}},
		{"rd", "rd step ", "allreduce", func(ctx context.Context, c collective.Comm) error {
			return c.AllReduce(ctx, collective.NewTensor(collective.Float32, 1000), collective.Sum)
		}},
		{"auto", "binomial broadcast", "broadcast", func(ctx context.Context, c collective.Comm) error {
			return c.Broadcast(ctx, collective.NewTensor(collective.Float32, 1000), 3)
		}},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			const n, absent = 4, 3
			trs := transport.NewMemWorld(n, transport.MemOptions{})
			errs := make(chan error, n-1)
			for r := range n - 1 {
				c, err := collective.New(t.Context(), Name, collective.Config{
					Rank: r, Size: n, Transport: trs[r], Timeout: 200 * time.Millisecond,
					Options: map[string]string{"algo": tc.algo},
				})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				go func() { errs <- tc.op(t.Context(), c) }()
			}
			defer trs[absent].Close()
			for i := range n - 1 {
				err := <-errs
				t.Logf("#%d: %v", i, err)
				if err == nil {
					t.Fatal("an operation with an absent rank succeeded")
				}
				var oe *collective.OpError
				if !errors.As(err, &oe) || oe.Strategy != Name {
					t.Errorf("%v: not an OpError of %s", err, Name)
				}
				// The first to time out names its place, and follows the
				// chain of waits to the absent rank; the others report the
				// abort it relayed, which carries the same text, or their
				// own diagnosis.
				for _, want := range []string{tc.want, "rank 3 waits for no message: it has not joined " + tc.opName + " #0"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%v: does not say %q", err, want)
					}
				}
			}
		})
	}
}

// Every rank ends an allreduce with the same bits, even where the operator
// is not commutative bit for bit: max of +0 and −0 keeps whichever it saw
// first.
func TestSameBits(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	for _, algo := range []string{"rd", "dbtree"} {
		for _, n := range []int{2, 4, 5, 7} {
			comms := memWorld(t, n, map[string]string{"algo": algo, "chunk": "64B"})
			ts := make([]collective.Tensor, n)
			errs := make(chan error, n)
			for r, c := range comms {
				x := make([]float32, 100)
				for i := range x {
					if (r+i)%2 == 1 {
						x[i] = negZero
					}
				}
				ts[r] = collective.FromFloat32(x)
				go func() { errs <- c.AllReduce(t.Context(), ts[r], collective.Max) }()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for r := 1; r < n; r++ {
				if !bytes.Equal(ts[r].Data, ts[0].Data) {
					t.Errorf("algo=%s np=%d: rank %d's result differs from rank 0's in its bits", algo, n, r)
				}
			}
			for _, c := range comms {
				c.Close()
			}
		}
	}
}
