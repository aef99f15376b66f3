package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// AllReduce runs the algorithm the "algo" option names; auto picks the
// whole-buffer ring (n−1 steps: fewest) for small buffers and the segmented
// pass (each rank moves 2(n−1)/n of the buffer: least data) for large ones.
// hier reduces within each host first and runs the "inter" algorithm across
// hosts (see core.Hierarchy); where the ranks have no hierarchy to use (one
// host, a host per rank, or a transport that does not say), it is the inter
// algorithm over the whole group.
func (a *algorithms) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	if a.algo == algoHier {
		flat := *a
		flat.algo = a.inter
		if h := c.Hierarchy(); h != nil {
			return h.AllReduce(c, t, op, a.chunkBytes(t.DType, len(t.Data)/2), flat.AllReduce)
		}
		return flat.AllReduce(c, t, op)
	}
	if a.pick(len(t.Data), c.Size()) == algoWhole {
		return a.whole(c, t, op)
	}
	return a.segmented(c, t, op)
}

// AllReduceAlgorithm names the algorithm AllReduce runs with the strategy
// options opts on a buffer of size bytes in a world of n ranks: "whole" or
// "rsag", or "hier" (which runs the inter option's algorithm across
// hosts). It is pick itself, for those who must know which path a
// measurement took without running it: the cost model fits the two apart
// and must switch where this code switches.
func AllReduceAlgorithm(opts map[string]string, n, size int) (string, error) {
	o, err := parseOptions(opts)
	if err != nil {
		return "", err
	}
	a := algorithms{algo: o.algo}
	return a.pick(size, n).String(), nil
}

// pick resolves auto for a buffer of size bytes in a world of n ranks.
func (a *algorithms) pick(size, n int) algo {
	if a.algo != algoAuto {
		return a.algo
	}
	if shapes.RingAutoWhole(n, size) {
		return algoWhole
	}
	return algoRSAG
}

// segmented runs the reduce-scatter and all-gather halves as one pipelined
// pass of 2(n−1) steps: at step g rank r sends segment r−g and receives
// segment r−g−1; after step n−2 it holds segment r+1 fully reduced, and the
// all-gather steps carry every reduced segment once around the ring.
func (a *algorithms) segmented(c *core.Call, t collective.Tensor, op collective.Op) error {
	n, r := c.Size(), c.Rank()
	segs := segments(t.DType, t.Count(), n)
	p := &pass{
		dt: t.DType, op: op, buf: t.Data,
		segs:        segs,
		steps:       2 * (n - 1),
		reduceSteps: n - 1,
		sendSeg:     func(g int) int { return core.Mod(r-g, n) },
		recvSeg:     func(g int) int { return core.Mod(r-g-1, n) },
		chunk:       a.chunkBytes(t.DType, largest(segs)),
	}
	return p.run(c)
}
