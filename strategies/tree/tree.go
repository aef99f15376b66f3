package tree

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// Name is the strategy's registered name.
const Name = "tree"

func init() {
	collective.Register(Name, core.Strategy[options]{
		Name:       Name,
		Summary:    "double binary tree (NCCL) or recursive doubling allreduce; binomial broadcast, reduce, gather, scatter",
		Options:    parseOptions,
		Algorithms: func(o options) core.Algorithms { return &algorithms{algo: o.algo, inter: o.inter, chunk: o.chunk} },
	})
}

// algo selects the allreduce algorithm.
type algo uint8

const (
	algoAuto   algo = iota // rd up to shapes.TreeAutoMaxRD bytes, dbtree above
	algoDBTree             // double binary tree, pipelined
	algoRD                 // recursive doubling
	algoHier               // within hosts, then across them by one of the others (core.Hierarchy)
)

var algoNames = [...]string{algoAuto: "auto", algoDBTree: "dbtree", algoRD: "rd", algoHier: "hier"}

func (a algo) String() string { return algoNames[a] }

type options struct {
	algo  algo
	inter algo // algo=hier's allreduce across hosts: auto, dbtree or rd
	chunk int
}

func parseOptions(opts map[string]string) (options, error) {
	o, err := core.ParseAlgoOptions(opts, algoNames[:], int(algoHier), shapes.TreeDefaultChunk)
	return options{algo: algo(o.Algo), inter: algo(o.Inter), chunk: o.Chunk}, err
}

// algorithms are the tree strategy's collectives for one group. All-gather,
// reduce-scatter, all-to-all and barrier are core's: the first three move
// each block once, directly, which no tree improves on, and the barrier is
// already a ⌈log2 n⌉-round dissemination.
type algorithms struct {
	core.Simple
	algo  algo
	inter algo
	chunk int
}

var _ core.Algorithms = (*algorithms)(nil)

// chunkBytes is the chunk size in whole elements of dt.
func (a *algorithms) chunkBytes(dt collective.DType) int { return core.ChunkBytes(a.chunk, dt) }
