package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Reduce is a pipelined chain into the root: root+1 sends its chunks to
// root+2, which reduces them into its own as they arrive and passes them
// on, and so on until the root. Non-root ranks accumulate in a scratch copy,
// leaving t as it was.
func (a *algorithms) Reduce(c *core.Call, t collective.Tensor, root int, op collective.Op) error {
	n, r := c.Size(), c.Rank()
	pos := core.Mod(r-root-1, n) // root+1 is 0, root is n−1
	prev, next := core.Mod(r-1, n), core.Mod(r+1, n)
	acc := t.Data
	if pos != n-1 {
		acc = c.Scratch(0, len(t.Data))
		copy(acc, t.Data)
	}
	if pos == 0 {
		prev = -1
	}
	if pos == n-1 {
		next = -1
	}
	return chain(c, prev, next, cut(acc, a.chunkBytes(t.DType, len(acc))), true, t.DType, op)
}
