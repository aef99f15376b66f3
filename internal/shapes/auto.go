package shapes

// RingAutoMaxWhole is the largest allreduce, in bytes, that the ring's
// algo=auto passes whole around the ring in a world of n ranks; larger ones
// take the segmented pass. The whole-buffer ring takes half the steps but
// moves n/2 times the bytes, so the switch comes earlier in larger worlds.
//
// Chosen where `distbench run --opt algo=whole|rsag` crossed over on
// loopback (docs/tuning.md, ring-whole; `make tune` remeasures it). A
// network with more latency per hop moves the switch up: measure there and
// set algo=whole or algo=rsag to override.
func RingAutoMaxWhole(n int) int {
	if n <= 4 {
		return 32 << 10
	}
	return 16 << 10
}

// TreeAutoMaxRD is the largest allreduce, in bytes, that the tree's
// algo=auto runs by recursive doubling; larger ones take the double binary
// tree. Recursive doubling moves the whole buffer log2 n times, the tree
// twice, so larger worlds favour the tree earlier; the switch sits at the
// np=8 crossover on loopback (docs/tuning.md, tree-rd; `make tune`
// remeasures it with `distbench run --opt algo=rd|dbtree`). A real network,
// with more latency per hop, moves it up; re-measure there before trusting
// it.
const TreeAutoMaxRD = 16 << 10

// RingAutoWhole reports whether the ring's algo=auto passes an allreduce of
// size bytes whole around a ring of n ranks (the segmented pass otherwise).
func RingAutoWhole(n, size int) bool { return size <= RingAutoMaxWhole(n) }

// TreeAutoRD reports whether the tree's algo=auto runs an allreduce of size
// bytes by recursive doubling (the double binary tree otherwise).
func TreeAutoRD(size int) bool { return size <= TreeAutoMaxRD }
