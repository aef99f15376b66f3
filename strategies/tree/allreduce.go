package tree

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// AllReduce runs the algorithm the "algo" option names; auto picks recursive
// doubling (log2 n whole-buffer exchanges: fewest hops) for small buffers and
// the double binary tree (each rank sends and receives about 2× the buffer
// whatever n: least data) for large ones.
//
// hier reduces within each host first and runs the "inter" algorithm across
// hosts (see core.Hierarchy); where the ranks have no hierarchy to use (one
// host, a host per rank, or a transport that does not say), it is the inter
// algorithm over the whole group.
func (a *algorithms) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	if a.algo == algoHier {
		flat := *a
		flat.algo = a.inter
		if h := c.Hierarchy(); h != nil {
			return h.AllReduce(c, t, op, a.chunk, flat.AllReduce)
		}
		return flat.AllReduce(c, t, op)
	}
	if a.pick(len(t.Data)) == algoRD {
		return a.recursiveDoubling(c, t, op)
	}
	return a.doubleTree(c, t, op)
}

// AllReduceAlgorithm names the algorithm AllReduce runs with the strategy
// options opts on a buffer of size bytes: "rd" or "dbtree", or "hier" (which
// runs the inter option's algorithm across hosts). It is pick itself, for
// those who must know which path a measurement took without running it:
// the cost model fits recursive doubling and the double tree apart, and
// must switch where this code switches.
func AllReduceAlgorithm(opts map[string]string, size int) (string, error) {
	o, err := parseOptions(opts)
	if err != nil {
		return "", err
	}
	a := algorithms{algo: o.algo, inter: o.inter, chunk: o.chunk}
	return a.pick(size).String(), nil
}

// pick resolves auto for a buffer of size bytes.
func (a *algorithms) pick(size int) algo {
	if a.algo != algoAuto {
		return a.algo
	}
	if shapes.TreeAutoRD(size) {
		return algoRD
	}
	return algoDBTree
}
