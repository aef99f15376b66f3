package tree

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// autoMaxRD is the largest allreduce, in bytes, that algo=auto runs by
// recursive doubling; larger ones take the double binary tree.
//
// Chosen from BenchmarkAllReduceTCP (bench_test.go): every rank a goroutine
// of one process, connected by the TCP mesh over loopback, on a 2-core AMD
// EPYC VM shared with other work (load 7–13, hence the spread); float32 sum,
// default chunk, median of 8 runs of 0.3 s, ± the 95% interval of benchstat:
//
//	size     np=4 rd       np=4 dbtree   np=8 rd       np=8 dbtree
//	1KiB     181µs ±38%    351µs ±82%    427µs ±2%     599µs ±54%
//	4KiB     224µs ±29%    303µs ±20%    463µs ±4%     523µs ±2%
//	8KiB     240µs ±22%    324µs ±28%    507µs ±1%     540µs ±1%
//	16KiB    605µs ±61%    779µs ±26%    629µs ±4%     589µs ±2%
//	32KiB    476µs ±54%    589µs ±4%     1.35ms ±21%   1.14ms ±16%
//	64KiB    623µs ±74%    628µs ±37%    2.54ms ±13%   822µs ±8%
//	256KiB   2.39ms ±3%    1.95ms ±26%   3.96ms ±66%   3.73ms ±37%
//
// At np=8 the tree is faster from 16KiB on (p ≤ 0.005 from 16 to 64KiB)
// and recursive doubling below. At np=4 recursive doubling is faster up to
// 8KiB (p < 0.001 at 1 and 8KiB), its medians stay lower up to 32KiB but
// within the noise, the two tie at 64KiB and the tree wins at 256KiB. Larger worlds favour the tree earlier
// (recursive doubling moves the whole buffer log2 n times, the tree twice),
// so the switch sits at the np=8 crossover. A real network, with more
// latency per hop, moves it up; re-measure there before trusting it.
const autoMaxRD = 16 << 10

// AllReduce runs the algorithm the "algo" option names; auto picks recursive
// doubling (log2 n whole-buffer exchanges: fewest hops) for small buffers and
// the double binary tree (each rank sends and receives about 2× the buffer
// whatever n: least data) for large ones.
func (a *algorithms) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	if a.pick(len(t.Data)) == algoRD {
		return a.recursiveDoubling(c, t, op)
	}
	return a.doubleTree(c, t, op)
}

// pick resolves auto for a buffer of size bytes.
func (a *algorithms) pick(size int) algo {
	if a.algo != algoAuto {
		return a.algo
	}
	if size <= autoMaxRD {
		return algoRD
	}
	return algoDBTree
}
