package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// autoMaxWhole is the largest allreduce, in bytes, that algo=auto passes
// whole around the ring in a world of n ranks; larger ones take the
// segmented pass. The whole-buffer ring takes half the steps but moves n/2
// times the bytes, so the switch comes earlier in larger worlds.
//
// Chosen from `distbench run --inplace in --opt algo=whole|rsag`, the two
// interleaved, np ranks as processes of a 2-core AMD EPYC VM over loopback
// (np 2: a core each, spinning; np 4 and 8: sharing, not spinning); float32
// sum, median µs of 200–300 iterations, the range of 3–4 rounds:
//
//	size     np=2 whole  np=2 rsag   np=4 whole  np=4 rsag   np=8 whole   np=8 rsag
//	4KiB     20–43       28–35       259–286     398–441     1127–1150    1674–1721
//	16KiB    20–22       32–33       321–335     464–503     1391–1622    1743–1824
//	32KiB    24–26       34–38       412–579     482–516     2024–2125    1829–1897
//	64KiB    56–65       44–45       715–795     534–581     3122–3330    2067–2172
//
// A network with more latency per hop than loopback moves the switch up;
// measure there and set algo=whole or algo=rsag to override.
func autoMaxWhole(n int) int {
	if n <= 4 {
		return 32 << 10
	}
	return 16 << 10
}

// AllReduce runs the algorithm the "algo" option names; auto picks the
// whole-buffer ring (n−1 steps: fewest) for small buffers and the segmented
// pass (each rank moves 2(n−1)/n of the buffer: least data) for large ones.
func (a *algorithms) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	if a.pick(len(t.Data), c.Size()) == algoWhole {
		return a.whole(c, t, op)
	}
	return a.segmented(c, t, op)
}

// pick resolves auto for a buffer of size bytes in a world of n ranks.
func (a *algorithms) pick(size, n int) algo {
	if a.algo != algoAuto {
		return a.algo
	}
	if size <= autoMaxWhole(n) {
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
