package shapes

import "math/bits"

// The ring's pipeline chunks. RingDefaultChunk is the largest pipeline
// chunk unless the chunk option says otherwise, and RingRelayChunk that of
// allgather and reduce-scatter above np 2. Unset, the chunk is a quarter of
// the largest segment (of the buffer, for the chains) between
// RingMinAutoChunk and the largest, so that even a segment of a few hundred
// kilobytes crosses the ring as a pipeline of four.
//
// Each message costs a wake-up and a pass through the matching engine, so
// larger chunks are cheaper, until the pipeline has too few of them to fill.
// Allgather and reduce-scatter above np 2 came out faster with more, smaller
// chunks; allreduce did not. Measured with `distbench run --inplace in --opt
// chunk=…`; `make tune` regenerates the table (docs/tuning.md, ring-chunk).
const (
	RingDefaultChunk = 1 << 20
	RingRelayChunk   = 256 << 10
	RingMinAutoChunk = 64 << 10
)

// RingLagOneChunk is the smallest chunk that a ring pass forwards with a
// lag of 1 rather than 2 (see the ring's waveLag; the cost model's
// schedules and closed forms switch where the ring does).
const RingLagOneChunk = 256 << 10

// TreeDefaultChunk is the pipeline chunk size of the double binary tree and
// the binomial broadcast and reduce. On loopback at np 4, 256KiB tied with
// 1MiB at 16MiB (64KiB paid more per-message costs, 4MiB left the pipeline
// too few chunks) and fills the tree's pipeline (depth × chunk) four times
// sooner. `make tune` remeasures it (docs/tuning.md, tree-chunk).
const TreeDefaultChunk = 256 << 10

// TreeSlots is the number of staging buffers per child between receiving a
// chunk and reducing it in a pipelined tree: enough to keep a receive posted
// while another chunk is reduced, as in the ring.
const TreeSlots = 4

// TreeWindow is the double binary tree's flow-control window in chunks, in
// a world of n ranks: a round trip is at most 2⌈log2 n⌉ hops (BinaryTree is
// at most ⌈log2 n⌉+1 deep), plus the slots a child's chunks may wait in to
// be reduced.
func TreeWindow(n int) int { return 2*bits.Len(uint(n)) + TreeSlots }
