package ring

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/kernels"
)

// whole is the latency-bound allreduce of the ring, Gloo's allreduce_ring:
// every rank's whole buffer travels once around the ring, n−1 steps in which
// rank r forwards to its right the buffer it received from its left at the
// step before (its own at step 0), and then every rank reduces the n
// buffers itself. Half the steps of the segmented pass, each moving the
// whole buffer rather than 1/n of it: the ring's answer for small messages,
// where each step costs a round of wake-ups and the bytes cost little. At
// np 2 it is a single exchange.
//
// Every rank reduces x0 op x1 op … op x(n−1), in rank order, whatever order
// the buffers arrived in, so that every rank ends with the same bits even
// where op is not commutative bit for bit (max of +0 and −0, NaN payloads)
// or, for floating point, not associative. That costs a scratch slot per
// other rank and, on every rank but 0, a copy of the result into place.
func (a *algorithms) whole(c *core.Call, t collective.Tensor, op collective.Op) error {
	n, r := c.Size(), c.Rank()
	size := len(t.Data)
	right, left := core.Mod(r+1, n), core.Mod(r-1, n)

	// slot(k) holds rank k's buffer: this rank's own is t, the others land
	// in one scratch region, each at its rank's offset.
	scratch := c.Scratch(0, n*size)
	slot := func(k int) []byte {
		if k == r {
			return t.Data
		}
		return scratch[k*size : (k+1)*size]
	}
	// At step g this rank sends rank r−g's buffer, once it has received
	// it at step g−1, and receives rank r−g−1's.
	s := c.Schedule(t.DType, op)
	in := core.None
	for g := range n - 1 {
		s.Send(right, 0, slot(core.Mod(r-g, n)), in)
		in = s.Recv(left, 0, slot(core.Mod(r-g-1, n)))
	}
	s.Where = func(i core.Step) string { return fmt.Sprintf("whole step %d of %d", i/2+1, n-1) }
	if err := c.Run(s); err != nil {
		return err
	}
	acc := slot(0)
	for k := 1; k < n; k++ {
		kernels.Reduce(t.DType, op, acc, slot(k))
	}
	if r != 0 {
		copy(t.Data, acc)
	}
	return nil
}
