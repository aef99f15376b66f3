package shapes

// Node is a rank's place in one tree: its parent (−1 at the root) and its
// children, in the order the rank serves them (and reduces their
// contributions).
type Node struct {
	Parent   int
	Children []int
}

// BinaryTree is rank r's place in NCCL's binary tree over n ranks (ncclGetBtree
// in NCCL's src/graph/trees.cc). Rank 0 is the root, with the single child
// 2^k, the largest power of two below n; below it a rank whose lowest set
// bit is b has the children r−b/2 and r+b/2 (or the largest r+b/2^j that
// exists), so odd ranks are leaves and even ranks interior:
//
//	0 ── 8
//	     ├── 4
//	     │   ├── 2 ── 1, 3
//	     │   └── 6 ── 5, 7
//	     └── 12
//	         └── 10 ── 9, 11        (n = 13: 12's second child would be 14)
func BinaryTree(n, r int) Node {
	if r == 0 {
		bit := 1
		for bit < n {
			bit <<= 1
		}
		nd := Node{Parent: -1}
		if n > 1 {
			nd.Children = []int{bit >> 1}
		}
		return nd
	}
	bit := r & -r
	parent := (r ^ bit) | bit<<1 // r is its parent's first child …
	if parent >= n {
		parent = r ^ bit // … unless that parent does not exist: then its second
	}
	nd := Node{Parent: parent}
	if low := bit >> 1; low > 0 {
		nd.Children = append(nd.Children, r-low)
		for low > 0 && r+low >= n {
			low >>= 1
		}
		if low > 0 {
			nd.Children = append(nd.Children, r+low)
		}
	}
	return nd
}

// DoubleTree is rank r's place in the two trees of NCCL's double binary tree
// (ncclGetDtree). Tree 0 is BinaryTree; tree 1 is BinaryTree mirrored (rank r plays
// n−1−r) when n is even, or shifted by one (rank r plays r−1) when n is
// odd. Since BinaryTree's leaves are its odd ranks, mirroring makes every rank a
// leaf in one of the trees and interior in at most one; the shift does the
// same for every rank except 0, which is the root of tree 0 (with a single
// child) and may be interior in tree 1. Each rank thus sends and receives
// about the same amount in the two trees together.
func DoubleTree(n, r int) [2]Node {
	t1, mapRank := BinaryTree(n, (r-1+n)%n), func(x int) int { return (x + 1) % n }
	if n%2 == 0 {
		t1, mapRank = BinaryTree(n, n-1-r), func(x int) int { return n - 1 - x }
	}
	if t1.Parent >= 0 {
		t1.Parent = mapRank(t1.Parent)
	}
	children := make([]int, len(t1.Children))
	for i, c := range t1.Children {
		children[i] = mapRank(c)
	}
	t1.Children = children
	return [2]Node{BinaryTree(n, r), t1}
}

// Binomial is rank r's place in the binomial tree over n ranks rooted at
// root. In root-relative ranks v = r−root (mod n), v's parent is v with its
// lowest set bit cleared and its children are v+2^j for every 2^j below that
// bit (below n, for the root) with v+2^j < n, largest subtree first:
//
//	0 ── 4 ── 6 ── 7
//	│    └─── 5
//	├─── 2 ── 3
//	└─── 1
//
// so the tree is ⌈log2 n⌉ levels deep and v's subtree is the contiguous
// relative ranks [v, v+BinomialSpan(v, n)).
func Binomial(n, root, r int) Node {
	v := ((r-root)%n + n) % n
	nd := Node{Parent: -1}
	bit := lowBit(v, n)
	if v != 0 {
		nd.Parent = (v - bit + root) % n
	}
	for m := bit >> 1; m > 0; m >>= 1 {
		if v+m < n {
			nd.Children = append(nd.Children, (v+m+root)%n)
		}
	}
	return nd
}

// lowBit is v's lowest set bit, or for the root (v = 0) the smallest power of
// two not below n.
func lowBit(v, n int) int {
	if v != 0 {
		return v & -v
	}
	b := 1
	for b < n {
		b <<= 1
	}
	return b
}

// BinomialSpan is the number of ranks in relative rank v's subtree.
func BinomialSpan(v, n int) int { return min(lowBit(v, n), n-v) }
