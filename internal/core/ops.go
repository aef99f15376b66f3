package core

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
)

// The ops the algorithms never see: Avg and MulSum are rewritten as Sum,
// with a step of the engine's own after or before them.

func checkOp(op collective.Op) error {
	if !op.Valid() {
		return fmt.Errorf("invalid op %d (accepted: sum, prod, max, min, avg, mulsum)", op)
	}
	return nil
}

// finishAvg returns the op the algorithms see, and a function to run after
// them on the tensor that holds the result, t.
func (g *Group) finishAvg(op collective.Op, t collective.Tensor) (collective.Op, func(collective.Tensor)) {
	if op != collective.Avg || g.nativeAvg(t) {
		return op, func(collective.Tensor) {}
	}
	n := g.Size()
	return collective.Sum, func(t collective.Tensor) { kernels.Divide(t, n) }
}

// premul rewrites MulSum as the Sum the algorithms see, and returns the
// factor by which this rank's input is multiplied first (1 for every other
// op, and on even ranks). The multiplication runs on the host, so a
// MulSum's device tensors are staged through host memory even on an
// engine that reduces on the device (nccl, whose own pre-multiplying op is
// not wired): its time includes the copies.
func (g *Group) premul(op collective.Op) (collective.Op, float64, bool) {
	if op != collective.MulSum {
		return op, 1, false
	}
	return collective.Sum, collective.PremulScalar(g.rank), true
}
