package core_test

import (
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/transport"
)

// MemWorld builds an n-rank world of algorithms made by factory over the
// in-memory transport, with seeded delays so message arrival orders vary.
func memWorld(t testing.TB, n int, factory core.Factory) []collective.Comm {
	trs := transport.NewMemWorld(n, transport.MemOptions{MaxDelay: 50_000, Seed: uint64(n)})
	comms := make([]collective.Comm, n)
	for r := range n {
		g, err := core.New("simple", collective.Config{Rank: r, Size: n, Transport: trs[r]}, factory)
		if err != nil {
			t.Fatal(err)
		}
		comms[r] = g
	}
	return comms
}

func TestSimpleConformance(t *testing.T) {
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return memWorld(t, n, func(*core.Group) (core.Algorithms, error) { return core.Simple{}, nil })
	}, collectivetest.Options{Short: true}) // the reference algorithms; strategies run the full suite
}
