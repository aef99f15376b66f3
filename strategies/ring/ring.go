package ring

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Name is the strategy's registered name.
const Name = "ring"

// DefaultChunk is the pipeline chunk size. Measured on loopback at np 2 and
// 4 (see the package's benchmarks): 256 KiB to 4 MiB are within noise of
// each other; below 128 KiB per-message costs dominate.
const DefaultChunk = 1 << 20

func init() {
	collective.Register(Name, core.Strategy[options]{
		Name:       Name,
		Summary:    "ring allreduce (reduce-scatter + all-gather), chunked and pipelined; chain broadcast and reduce",
		Options:    parseOptions,
		Algorithms: func(o options) core.Algorithms { return &algorithms{chunk: o.chunk} },
	})
}

type options struct{ chunk int }

func parseOptions(opts map[string]string) (options, error) {
	o := options{chunk: DefaultChunk}
	for k, v := range opts {
		switch k {
		case "chunk":
			n, err := core.ParseChunk(v)
			if err != nil {
				return o, err
			}
			o.chunk = n
		default:
			return o, fmt.Errorf("unknown option %q (accepted: chunk)", k)
		}
	}
	return o, nil
}

// algorithms are the ring's collectives for one group.
type algorithms struct {
	core.Simple
	chunk int
}

var _ core.Algorithms = (*algorithms)(nil)

// chunkBytes is the chunk size in whole elements of dt.
func (a *algorithms) chunkBytes(dt collective.DType) int { return core.ChunkBytes(a.chunk, dt) }

// segments cuts count elements of dt into n near-equal byte ranges.
func segments(dt collective.DType, count, n int) [][2]int {
	segs := make([][2]int, n)
	for i := range n {
		lo, hi := core.Block(count, n, i)
		segs[i] = [2]int{lo * dt.Size(), hi * dt.Size()}
	}
	return segs
}
