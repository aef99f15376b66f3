package ring_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/strategies/ring"
)

// memWorld builds an n-rank ring world over the in-memory transport, with a
// small chunk so that even modest counts exercise the pipeline, and seeded
// delays so that messages arrive in varying orders.
func memWorld(t testing.TB, n int, opts map[string]string) []collective.Comm {
	return collectivetest.MemWorld(t, "ring", n, opts, transport.MemOptions{MaxDelay: 20_000, Seed: 7 * uint64(n)})
}

func TestConformance(t *testing.T) {
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return memWorld(t, n, map[string]string{"chunk": "4KiB"})
	})
}

// Both allreduce algorithms pass the whole suite, not only the sizes auto
// gives each: the whole-buffer ring at a million elements, the segmented
// pass at one.
func TestConformanceAlgorithms(t *testing.T) {
	for _, algo := range []string{"whole", "rsag"} {
		t.Run(algo, func(t *testing.T) {
			collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
				return memWorld(t, n, map[string]string{"algo": algo, "chunk": "4KiB"})
			}, collectivetest.Options{Short: true})
		})
	}
}

// Every rank ends an allreduce with the same bits, whichever algorithm runs:
// even where the operator is not commutative bit for bit (max of +0 and −0
// keeps whichever it saw first) or not associative (a float sum, whose
// result depends on the order it adds in).
func TestSameBits(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	inputs := map[collective.Op]func(r, i int, rng *rand.Rand) float32{
		collective.Max: func(r, i int, _ *rand.Rand) float32 {
			if (r+i)%2 == 1 {
				return negZero
			}
			return 0
		},
		collective.Sum: func(_, _ int, rng *rand.Rand) float32 {
			return float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8))))
		},
	}
	for _, algo := range []string{"whole", "rsag"} {
		for op, input := range inputs {
			for _, n := range []int{2, 3, 4, 5, 7} {
				comms := memWorld(t, n, map[string]string{"algo": algo, "chunk": "64B"})
				ts := make([]collective.Tensor, n)
				errs := make(chan error, n)
				for r, c := range comms {
					rng := rand.New(rand.NewPCG(uint64(r), 1))
					x := make([]float32, 100)
					for i := range x {
						x[i] = input(r, i, rng)
					}
					ts[r] = collective.FromFloat32(x)
					go func() { errs <- c.AllReduce(t.Context(), ts[r], op) }()
				}
				for range n {
					if err := <-errs; err != nil {
						t.Fatal(err)
					}
				}
				for r := 1; r < n; r++ {
					if !bytes.Equal(ts[r].Data, ts[0].Data) {
						t.Errorf("algo=%s op=%s np=%d: rank %d's result differs from rank 0's in its bits", algo, op, n, r)
					}
				}
				for _, c := range comms {
					c.Close()
				}
			}
		}
	}
}

// A rank that never joins an allreduce makes the others fail by their
// deadline with an error that names the operation, the step they were at,
// the rank they were waiting for and, following the chain of waits (every
// rank of a ring waits on its left neighbour), the absent rank; the others
// report the abort that the first to time out relayed.
func TestErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ algo, want string }{
		{"whole", "whole step "},
		{"rsag", "step "},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			const n, absent = 4, 3
			trs := transport.NewMemWorld(n, transport.MemOptions{})
			errs := make(chan error, n-1)
			for r := range n - 1 {
				c, err := collective.New(t.Context(), "ring", collective.Config{
					Rank: r, Size: n, Transport: trs[r], Timeout: 200 * time.Millisecond,
					Options: map[string]string{"algo": tc.algo},
				})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				go func() {
					errs <- c.AllReduce(t.Context(), collective.NewTensor(collective.Float32, 1000), collective.Sum)
				}()
			}
			defer trs[absent].Close()
			for range n - 1 {
				err := <-errs
				if err == nil {
					t.Fatal("an allreduce with an absent rank succeeded")
				}
				var oe *collective.OpError
				if !errors.As(err, &oe) || oe.Strategy != "ring" {
					t.Errorf("%v: not an OpError of ring", err)
				}
				for _, want := range []string{"allreduce #0: " + tc.want, "waiting for a message from rank ", "rank 3 waits for no message: it has not joined allreduce #0"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%v: does not say %q", err, want)
					}
				}
			}
		})
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		ok   bool
	}{
		{nil, true},
		{map[string]string{"chunk": "256KiB"}, true},
		{map[string]string{"chunk": "8"}, false},
		{map[string]string{"chunk": "lots"}, false},
		{map[string]string{"algo": "whole"}, true},
		{map[string]string{"algo": "rsag", "chunk": "1MiB"}, true},
		{map[string]string{"algo": "dbtree"}, false},
		{map[string]string{"algo": "hier"}, true},
		{map[string]string{"algo": "hier", "inter": "whole"}, true},
		{map[string]string{"algo": "hier", "inter": "hier"}, false},
		{map[string]string{"algo": "rsag", "inter": "whole"}, false},
		{map[string]string{"window": "2"}, false},
	} {
		_, err := collective.New(t.Context(), "ring", collective.Config{Rank: 0, Size: 1, Options: tc.opts})
		if (err == nil) != tc.ok {
			t.Errorf("options %v: err = %v, want ok=%v", tc.opts, err, tc.ok)
		}
	}
}

// algo=auto switches from the whole-buffer ring to rsag above 32 KiB at
// np ≤ 4 and 16 KiB above (shapes.RingAutoMaxWhole).
func TestAllReduceAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		opts    map[string]string
		n, size int
		want    string
	}{
		{nil, 4, 32 << 10, "whole"},
		{nil, 4, 32<<10 + 1, "rsag"},
		{nil, 8, 16 << 10, "whole"},
		{nil, 8, 16<<10 + 1, "rsag"},
		{nil, 8, 32 << 10, "rsag"}, // larger worlds switch earlier
		{map[string]string{"algo": "auto"}, 2, 1 << 20, "rsag"},
		{map[string]string{"algo": "whole"}, 8, 1 << 20, "whole"},
		{map[string]string{"algo": "rsag"}, 2, 4, "rsag"},
		{map[string]string{"algo": "hier", "inter": "whole"}, 8, 4, "hier"},
	} {
		got, err := ring.AllReduceAlgorithm(tc.opts, tc.n, tc.size)
		if err != nil || got != tc.want {
			t.Errorf("AllReduceAlgorithm(%v, %d, %d) = %q, %v; want %q", tc.opts, tc.n, tc.size, got, err, tc.want)
		}
	}
	if _, err := ring.AllReduceAlgorithm(map[string]string{"algo": "bogus"}, 2, 4); err == nil {
		t.Error("AllReduceAlgorithm accepted algo=bogus")
	}
}
