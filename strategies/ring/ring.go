package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// Name is the strategy's registered name.
const Name = "ring"

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
	algoAuto  algo = iota // whole up to shapes.RingAutoMaxWhole, rsag above
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
	o, err := core.ParseAlgoOptions(opts, algoNames[:], int(algoHier), 0)
	return options{algo: algo(o.Algo), inter: algo(o.Inter), chunk: o.Chunk}, err
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
	return a.chunkUpTo(dt, span, shapes.RingDefaultChunk)
}

// relayChunk is the chunk size of allgather and reduce-scatter in a world
// of n ranks, over segs: see shapes.RingRelayChunk.
func (a *algorithms) relayChunk(dt collective.DType, segs [][2]int, n int) int {
	limit := shapes.RingDefaultChunk
	if n > 2 {
		limit = shapes.RingRelayChunk
	}
	return a.chunkUpTo(dt, largest(segs), limit)
}

func (a *algorithms) chunkUpTo(dt collective.DType, span, limit int) int {
	chunk := a.chunk
	if chunk == 0 {
		chunk = min(max(span/4, shapes.RingMinAutoChunk), limit)
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
