package ring

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// Broadcast is a pipelined chain root → root+1 → … → root−1: each rank
// receives chunk k straight into t and forwards it while chunk k+1 arrives,
// so the time is about (size + (n−2)·chunk) / bandwidth rather than
// (n−1)·size / bandwidth.
func (a *algorithms) Broadcast(c *core.Call, t collective.Tensor, root int) error {
	n, r := c.Size(), c.Rank()
	pos := core.Mod(r-root, n)
	prev, next := core.Mod(r-1, n), core.Mod(r+1, n)
	if pos == 0 {
		prev = -1
	}
	if pos == n-1 {
		next = -1
	}
	return chain(c, prev, next, cut(t.Data, a.chunkBytes(t.DType, len(t.Data))), false, t.DType, collective.Sum)
}
