package shapes

import (
	"fmt"
	"slices"
	"testing"
)

// checkTree checks that nodes (indexed by rank) form one tree: one root,
// every parent lists its child exactly once, and every rank reaches the
// root.
func checkTree(nodes []Node) error {
	n := len(nodes)
	roots := 0
	for r, nd := range nodes {
		if nd.Parent < 0 {
			roots++
		} else if nd.Parent >= n || slices.Index(nodes[nd.Parent].Children, r) < 0 {
			return fmt.Errorf("rank %d: parent %d does not list it as a child", r, nd.Parent)
		}
		for _, c := range nd.Children {
			if c < 0 || c >= n || nodes[c].Parent != r {
				return fmt.Errorf("rank %d: child %d has another parent", r, c)
			}
		}
		seen := map[int]bool{}
		for x := r; nodes[x].Parent >= 0; x = nodes[x].Parent {
			if seen[x] {
				return fmt.Errorf("rank %d: cycle through %d", r, x)
			}
			seen[x] = true
		}
	}
	if roots != 1 {
		return fmt.Errorf("%d roots", roots)
	}
	return nil
}

func TestDoubleBinaryTree(t *testing.T) {
	for n := 1; n <= 130; n++ {
		var trees [2][]Node
		for r := range n {
			d := DoubleTree(n, r)
			trees[0], trees[1] = append(trees[0], d[0]), append(trees[1], d[1])
		}
		for i, tr := range trees {
			if err := checkTree(tr); err != nil {
				t.Fatalf("n=%d tree %d: %v", n, i, err)
			}
			for r, nd := range tr {
				if len(nd.Children) > 2 {
					t.Fatalf("n=%d tree %d: rank %d has %d children", n, i, r, len(nd.Children))
				}
			}
		}
		// NCCL's property: a leaf in at least one tree (rank 0 excepted
		// when n is odd: it roots tree 0 with one child and may be interior
		// in the shifted tree 1).
		for r := range n {
			if len(trees[0][r].Children) > 0 && len(trees[1][r].Children) > 0 && (n%2 == 0 || r != 0) {
				t.Errorf("n=%d: rank %d is interior in both trees", n, r)
			}
		}
	}
}

func TestBinomialTree(t *testing.T) {
	for n := 1; n <= 70; n++ {
		for root := range n {
			nodes := make([]Node, n)
			for r := range n {
				nodes[r] = Binomial(n, root, r)
			}
			if err := checkTree(nodes); err != nil {
				t.Fatalf("n=%d root=%d: %v", n, root, err)
			}
			if nodes[root].Parent >= 0 {
				t.Fatalf("n=%d root=%d: root has parent %d", n, root, nodes[root].Parent)
			}
			for r := range n {
				v := ((r-root)%n + n) % n
				total := 1
				for _, c := range nodes[r].Children {
					total += BinomialSpan(((c-root)%n+n)%n, n)
				}
				if total != BinomialSpan(v, n) {
					t.Fatalf("n=%d root=%d rank %d: children's spans add to %d, span is %d", n, root, r, total, BinomialSpan(v, n))
				}
				depth := 0
				for x := r; nodes[x].Parent >= 0; x = nodes[x].Parent {
					depth++
				}
				if 1<<depth > 2*n-1 { // depth ≤ ⌈log2 n⌉
					t.Fatalf("n=%d root=%d: rank %d at depth %d", n, root, r, depth)
				}
			}
		}
	}
}
