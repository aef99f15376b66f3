package tree_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/transport"
	_ "github.com/distbench/distbench/strategies/tree"
)

// Four ranks, here goroutines over the in-memory transport, sum a vector
// with the double binary tree.
func Example() {
	const n = 4
	trs := transport.NewMemWorld(n, transport.MemOptions{})
	var wg sync.WaitGroup
	results := make([][]float32, n)
	for r := range n {
		wg.Go(func() {
			ctx := context.Background()
			comm, err := collective.New(ctx, "tree", collective.Config{
				Rank: r, Size: n, Transport: trs[r],
				Options: map[string]string{"algo": "dbtree", "chunk": "64KiB"},
			})
			if err != nil {
				panic(err)
			}
			defer comm.Close()
			x := []float32{float32(r), 1, 10}
			if err := comm.AllReduce(ctx, collective.FromFloat32(x), collective.Sum); err != nil {
				panic(err)
			}
			results[r] = x
		})
	}
	wg.Wait()
	fmt.Println(results)
	// Output: [[6 4 40] [6 4 40] [6 4 40] [6 4 40]]
}
