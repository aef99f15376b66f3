package tree

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Name is the strategy's registered name.
const Name = "tree"

// DefaultChunk is the pipeline chunk size of the double binary tree and the
// binomial broadcast and reduce. On loopback at np 4, 256KiB tied with 1MiB
// at 16MiB (64KiB paid more per-message costs, 4MiB left the pipeline too
// few chunks) and fills the tree's pipeline (depth × chunk) four times sooner.
// `make tune` remeasures it (docs/tuning.md, tree-chunk).
const DefaultChunk = 256 << 10

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
	algoAuto   algo = iota // rd up to autoMaxRD bytes, dbtree above
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
	o := options{algo: algoAuto, chunk: DefaultChunk}
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
