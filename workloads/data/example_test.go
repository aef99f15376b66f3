package data_test

import (
	"fmt"

	"github.com/distbench/distbench/workloads/data"
)

// Ten samples over three ranks, unshuffled: torch's layout, padded to 12 by
// repeating from the start.
func ExampleDistributedSampler() {
	for rank := 0; rank < 3; rank++ {
		s := &data.DistributedSampler{N: 10, World: 3, Rank: rank}
		fmt.Println(rank, s.Indices(0))
	}
	// Output:
	// 0 [0 3 6 9]
	// 1 [1 4 7 0]
	// 2 [2 5 8 1]
}

func ExampleLoad() {
	d, err := data.Load("mnist", "testdata/mnist-sample", data.Test)
	if err != nil {
		panic(err)
	}
	l := &data.Loader{Data: d, BatchSize: 8}
	ep, _ := l.Epoch(0)
	for b := ep.Next(); b != nil; b = ep.Next() {
		fmt.Println(b.Shape, b.Labels)
	}
	// Output:
	// [8 1 28 28] [7 2 1 0 4 1 4 9]
	// [8 1 28 28] [5 9 0 6 9 0 1 5]
}
