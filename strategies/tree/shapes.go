package tree

// Node is a rank's place in one of the trees this strategy builds: its
// parent (−1 at the root) and its children, in the order the rank serves
// them. The cost model (package costmodel) builds its schedules from the same
// trees through the functions below, so its trees cannot drift from these.
type Node struct {
	Parent   int
	Children []int
}

// Slots is the number of chunks a pipelined tree keeps in flight per child
// (its staging buffers), as the cost model's schedules must.
const Slots = slots

func (nd node) exported() Node { return Node{Parent: nd.parent, Children: nd.children} }

// BinaryTree is rank r's place in the binary tree of n ranks rooted at 0
// that is the double binary tree's first tree (btree).
func BinaryTree(n, r int) Node { return btree(n, r).exported() }

// DoubleTree is rank r's places in the double binary tree's two trees
// (dtree).
func DoubleTree(n, r int) [2]Node {
	d := dtree(n, r)
	return [2]Node{d[0].exported(), d[1].exported()}
}

// Binomial is rank r's place in the binomial tree of n ranks rooted at
// root that the broadcast runs down (binomial).
func Binomial(n, root, r int) Node { return binomial(n, root, r).exported() }
