package ring_test

import (
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/transport"
	_ "github.com/distbench/distbench/strategies/ring"
)

// memWorld builds an n-rank ring world over the in-memory transport, with a
// small chunk so that even modest counts exercise the pipeline, and seeded
// delays so that messages arrive in varying orders.
func memWorld(t testing.TB, n int, opts map[string]string) []collective.Comm {
	trs := transport.NewMemWorld(n, transport.MemOptions{MaxDelay: 20_000, Seed: 7 * uint64(n)})
	comms := make([]collective.Comm, n)
	for r := range n {
		c, err := collective.New(t.Context(), "ring", collective.Config{Rank: r, Size: n, Transport: trs[r], Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		comms[r] = c
	}
	return comms
}

func TestConformance(t *testing.T) {
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return memWorld(t, n, map[string]string{"chunk": "4KiB"})
	})
}

// plainTransport hides the transport's optional interfaces (Poster,
// ReducePoster), so that the engine's fallbacks for transports without them
// carry the ring's posted receives.
type plainTransport struct{ collective.Transport }

// The ring posts every receive of a pass before sending; on a transport
// that cannot post, the engine must still fill them in the order posted.
func TestConformanceWithoutPostedReceives(t *testing.T) {
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		trs := transport.NewMemWorld(n, transport.MemOptions{MaxDelay: 20_000, Seed: 3 * uint64(n)})
		comms := make([]collective.Comm, n)
		for r := range n {
			c, err := collective.New(t.Context(), "ring", collective.Config{
				Rank: r, Size: n, Transport: plainTransport{trs[r]}, Options: map[string]string{"chunk": "1KiB"},
			})
			if err != nil {
				t.Fatal(err)
			}
			comms[r] = c
		}
		return comms
	}, collectivetest.Options{Short: true, WorldSizes: []int{2, 3}})
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
		{map[string]string{"algo": "dbtree"}, false},
	} {
		_, err := collective.New(t.Context(), "ring", collective.Config{Rank: 0, Size: 1, Options: tc.opts})
		if (err == nil) != tc.ok {
			t.Errorf("options %v: err = %v, want ok=%v", tc.opts, err, tc.ok)
		}
	}
}
