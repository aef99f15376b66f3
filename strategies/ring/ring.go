package ring

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Name is the strategy's registered name.
const Name = "ring"

// DefaultChunk is the largest pipeline chunk of a chain (broadcast, reduce)
// and of a pass of one step (allgather and reduce-scatter at np 2) unless
// the chunk option says otherwise; ForwardChunk is that of a pass whose
// ranks forward what they receive (allreduce; allgather and reduce-scatter
// above np 2). Unset, the chunk is a quarter of the largest segment (of the
// buffer, for the chains) between MinAutoChunk and the largest, so that even
// a segment of a few hundred kilobytes crosses the ring as a pipeline of
// four.
//
// Where nothing is forwarded, or a chunk is forwarded the moment it arrives
// (the chains), larger chunks only save messages, each of which costs a
// wake-up and a pass through the matching engine. A pass forwards chunk c
// about waveLag chunks after it arrived (see [waveLag]): at 256 KiB that
// chunk, with the ones arriving and leaving meanwhile, is still in the
// core's L2 (1 MiB on the AMD EPYC we measured on; 1–2 MiB on current
// server cores) when the kernel copies it into the socket; at 1 MiB it has
// gone to L3 or memory, and a rank that is a little behind also forwards
// colder chunks, which puts it further behind.
//
// Measured with `distbench run --inplace in --opt chunk=256KiB|1MiB`, the two
// interleaved, on a 2-core VM over loopback, median of round medians:
//
//	allreduce np 2:  4 MiB 1.16 vs 1.42 ms, 16 MiB 5.15 vs 5.62 ms (7 rounds),
//	                 64 MiB 22.2 vs 23.8 ms (15 rounds), iterations within a
//	                 launch 20.5–25 ms vs 21–40 ms; 512 KiB: 25.6 ms
//	allreduce np 4:  4 MiB 9.5 vs 12.2 ms, 16 MiB 28.1 vs 31.5 ms, 64 MiB
//	                 105 vs 106 ms (np 8: 22.0 vs 23.7, 68 vs 75, 245 vs 245)
//	allgather, reduce-scatter np 4: 16 MiB 14.5 vs 22.3 and 18.6 vs 24.8 ms,
//	                 64 MiB equal
//	one step (np 2): allgather 64 MiB 12.8 vs 11.2 ms, reduce-scatter 16 MiB
//	                 5.4 vs 4.9 ms; chains np 4: broadcast 16 MiB 25.7 vs
//	                 20.3 ms, 64 MiB 74.5 vs 61.4 ms; reduce 64 MiB 80 vs 70
//	                 ms (each 5 rounds)
const (
	DefaultChunk = 1 << 20
	ForwardChunk = 256 << 10
)

// MinAutoChunk is the smallest chunk the automatic choice makes.
const MinAutoChunk = 64 << 10

func init() {
	collective.Register(Name, core.Strategy[options]{
		Name:       Name,
		Summary:    "ring allreduce (reduce-scatter + all-gather, chunked and pipelined; whole buffers when small); chain broadcast and reduce",
		Options:    parseOptions,
		Algorithms: func(o options) core.Algorithms { return &algorithms{algo: o.algo, chunk: o.chunk} },
	})
}

// algo selects the allreduce algorithm.
type algo uint8

const (
	algoAuto  algo = iota // whole up to autoMaxWhole, rsag above
	algoRSAG              // segmented: reduce-scatter + all-gather, pipelined
	algoWhole             // whole buffers around the ring, reduced by every rank
)

var algoNames = [...]string{algoAuto: "auto", algoRSAG: "rsag", algoWhole: "whole"}

func (a algo) String() string { return algoNames[a] }

type options struct {
	algo  algo
	chunk int // 0: automatic
}

func parseOptions(opts map[string]string) (options, error) {
	var o options
	for k, v := range opts {
		switch k {
		case "algo":
			a, err := core.ParseChoice(k, v, algoNames[:])
			if err != nil {
				return o, err
			}
			o.algo = algo(a)
		case "chunk":
			n, err := core.ParseChunk(v)
			if err != nil {
				return o, err
			}
			o.chunk = n
		default:
			return o, fmt.Errorf("unknown option %q (accepted: algo, chunk)", k)
		}
	}
	return o, nil
}

// algorithms are the ring's collectives for one group.
type algorithms struct {
	core.Simple
	algo  algo
	chunk int
}

var _ core.Algorithms = (*algorithms)(nil)

// chunkBytes is the chunk size, in whole elements of dt, for pipelining a
// chain over a buffer of span bytes.
func (a *algorithms) chunkBytes(dt collective.DType, span int) int {
	return a.chunkUpTo(dt, span, DefaultChunk)
}

// passChunk is the chunk size of a pass of steps steps over segs: see
// DefaultChunk and ForwardChunk.
func (a *algorithms) passChunk(dt collective.DType, segs [][2]int, steps int) int {
	limit := DefaultChunk
	if steps > 1 {
		limit = ForwardChunk
	}
	return a.chunkUpTo(dt, largest(segs), limit)
}

func (a *algorithms) chunkUpTo(dt collective.DType, span, limit int) int {
	chunk := a.chunk
	if chunk == 0 {
		chunk = min(max(span/4, MinAutoChunk), limit)
	}
	return core.ChunkBytes(chunk, dt)
}

// largest is the size of the largest of segs.
func largest(segs [][2]int) int {
	n := 0
	for _, s := range segs {
		n = max(n, s[1]-s[0])
	}
	return n
}

// segments cuts count elements of dt into n near-equal byte ranges.
func segments(dt collective.DType, count, n int) [][2]int {
	segs := make([][2]int, n)
	for i := range n {
		lo, hi := core.Block(count, n, i)
		segs[i] = [2]int{lo * dt.Size(), hi * dt.Size()}
	}
	return segs
}
