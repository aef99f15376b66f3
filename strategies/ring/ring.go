package ring

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Name is the strategy's registered name.
const Name = "ring"

// DefaultChunk is the largest pipeline chunk unless the chunk option says
// otherwise, and RelayChunk that of allgather and reduce-scatter above np 2.
// Unset, the chunk is a quarter of the largest segment (of the buffer, for
// the chains) between MinAutoChunk and the largest, so that even a segment
// of a few hundred kilobytes crosses the ring as a pipeline of four.
//
// Each message costs a wake-up and a pass through the matching engine, so
// larger chunks are cheaper, until the pipeline has too few of them to fill.
// Allgather and reduce-scatter above np 2 came out faster with more, smaller
// chunks; allreduce did not. Measured with `distbench run --inplace in --opt
// chunk=…`; `make tune` regenerates the table (docs/tuning.md, ring-chunk).
const (
	DefaultChunk = 1 << 20
	RelayChunk   = 256 << 10
)

// MinAutoChunk is the smallest chunk the automatic choice makes.
const MinAutoChunk = 64 << 10

func init() {
	collective.Register(Name, core.Strategy[options]{
		Name:       Name,
		Summary:    "ring allreduce (reduce-scatter + all-gather, chunked and pipelined; whole buffers when small); chain broadcast and reduce",
		Options:    parseOptions,
		Algorithms: func(o options) core.Algorithms { return &algorithms{algo: o.algo, inter: o.inter, chunk: o.chunk} },
	})
}

// algo selects the allreduce algorithm.
type algo uint8

const (
	algoAuto  algo = iota // whole up to autoMaxWhole, rsag above
	algoRSAG              // segmented: reduce-scatter + all-gather, pipelined
	algoWhole             // whole buffers around the ring, reduced by every rank
	algoHier              // within hosts, then across them by one of the others (core.Hierarchy)
)

var algoNames = [...]string{algoAuto: "auto", algoRSAG: "rsag", algoWhole: "whole", algoHier: "hier"}

func (a algo) String() string { return algoNames[a] }

type options struct {
	algo  algo
	inter algo // algo=hier's allreduce across hosts: auto, rsag or whole
	chunk int  // 0: automatic
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
		case "inter":
			a, err := core.ParseChoice(k, v, algoNames[:algoHier])
			if err != nil {
				return o, err
			}
			o.inter = algo(a)
		case "chunk":
			n, err := core.ParseChunk(v)
			if err != nil {
				return o, err
			}
			o.chunk = n
		default:
			return o, fmt.Errorf("unknown option %q (accepted: algo, chunk, inter)", k)
		}
	}
	if _, set := opts["inter"]; set && o.algo != algoHier {
		return o, fmt.Errorf("option inter=%s applies only to algo=hier", opts["inter"])
	}
	return o, nil
}

// algorithms are the ring's collectives for one group.
type algorithms struct {
	core.Simple
	algo  algo
	inter algo
	chunk int
}

var _ core.Algorithms = (*algorithms)(nil)

// chunkBytes is the chunk size, in whole elements of dt, for pipelining
// segments (or a chain's buffer) of at most span bytes.
func (a *algorithms) chunkBytes(dt collective.DType, span int) int {
	return a.chunkUpTo(dt, span, DefaultChunk)
}

// relayChunk is the chunk size of allgather and reduce-scatter in a world
// of n ranks, over segs: see RelayChunk.
func (a *algorithms) relayChunk(dt collective.DType, segs [][2]int, n int) int {
	limit := DefaultChunk
	if n > 2 {
		limit = RelayChunk
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
