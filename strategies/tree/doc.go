// Package tree is the tree strategy: allreduce as NCCL's double binary tree
// for large buffers and by recursive doubling for small ones, and binomial
// trees for broadcast, reduce, gather and scatter.
//
// # Double binary tree (algo=dbtree)
//
// A single binary tree allreduce (reduce up to the root, broadcast back
// down) has logarithmic latency but wastes half the bandwidth: its leaves,
// half the ranks, only ever send once and receive once. NCCL's double binary
// tree (Sanders, Speck and Träff, "Two-tree algorithms for full bandwidth
// broadcast, reduction and scan", Parallel Computing 2009; Jeaugey, "Massively
// Scale Your Deep Learning Training with NCCL 2.4", NVIDIA blog, 2019) runs
// two trees at once, each carrying half of the buffer, built so that every
// rank is a leaf in one of them and interior in at most one: tree 0 is a
// binary tree in which the odd ranks are the leaves, tree 1 the same tree
// mirrored (rank r in the place of n−1−r) for even n or shifted by one for
// odd n. Each rank then sends and receives about twice the buffer whatever
// n, as in the ring, in 2⌈log2 n⌉ hops instead of the ring's 2(n−1).
//
// Each half is cut into chunks ("chunk" option) that are pipelined: a rank
// reduces chunk k of its children into its own and passes it up while
// receiving chunk k+1, and the root sends chunk k down as soon as it is
// reduced, so chunks flow down the tree while later ones still flow up. The
// two trees use channels 0 and 1, since a pair of ranks may be linked in
// both. Every rank gets the result computed once at the root, so all hold the
// same bits.
//
// # Recursive doubling (algo=rd)
//
// Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication
// Operations in MPICH", IJHPCA 19(1), 2005: in step k rank r exchanges its
// whole partial result with rank r XOR 2^k and reduces, log2 n steps in all,
// the fewest possible hops, but each moves the whole buffer. A world that is
// not a power of two p is folded in: ranks p+i first send to rank i, which
// reduces their data in, takes part in the exchanges and sends them the
// result at the end.
//
// algo=auto (the default) uses recursive doubling up to shapes.TreeAutoMaxRD bytes and
// the double binary tree above; docs/tuning.md says how the switch point was
// measured and how to re-measure it.
//
// # Binomial trees
//
// Broadcast and reduce use the binomial tree rooted at the root (in
// root-relative ranks, v's parent is v with its lowest set bit cleared),
// ⌈log2 n⌉ levels, pipelined in chunks like the double binary tree. Gather
// and scatter send each subtree's blocks, which are contiguous in relative
// rank order, as one message per tree edge: ⌈log2 n⌉ steps rather than the
// n−1 messages through the root of a flat gather. All-gather,
// reduce-scatter, all-to-all and barrier use core's algorithms.
//
// The schedules (which rank sends which elements to whom, step by step) of
// the double binary tree, recursive doubling and the binomial broadcast are
// in testdata/, recorded from the algorithms themselves; see
// schedule_test.go.
//
// Options:
//
//	algo    allreduce algorithm: auto (default), dbtree, rd, or hier:
//	        reduce-scatter within each host, allreduce of the shards across
//	        hosts by inter, all-gather within each host (core.Hierarchy,
//	        docs/design/hier.md); with no hosts to tell apart it is inter over all
//	        the ranks
//	inter   hier's algorithm across hosts: auto (default), dbtree or rd
//	chunk   pipeline chunk size (e.g. 64KiB, 1MiB); default 256KiB
package tree
