package tree

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// doubleTree is NCCL's double binary tree allreduce: the first half of the
// buffer is reduced up tree 0 and broadcast down it, the second half up and
// down tree 1, both at once and each chunked and pipelined, on channels 0 and
// 1 (a pair of ranks may be linked in both trees). The roots compute the
// result and everyone receives it from them, so every rank ends with the
// same bits.
func (a *algorithms) doubleTree(c *core.Call, t collective.Tensor, op collective.Op) error {
	trees := shapes.DoubleTree(c.Size(), c.Rank())
	var flows [2]*flow
	for i, nd := range trees {
		lo, hi := core.Block(t.Count(), 2, i)
		flows[i] = &flow{
			node: nd, name: [2]string{"dbtree tree 0", "dbtree tree 1"}[i], channel: uint8(i),
			dt: t.DType, op: op, buf: t.Slice(lo, hi).Data, chunk: a.chunkBytes(t.DType),
			up: true, down: true, window: shapes.TreeWindow(c.Size()),
		}
	}
	// Binary trees: at most 2 children, so tree 1's slots start at 2·TreeSlots.
	return run(c, func(i int) int { return i * 2 * shapes.TreeSlots }, flows[:]...)
}
