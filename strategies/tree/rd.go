package tree

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/kernels"
)

// recursiveDoubling is the latency-optimal allreduce of Thakur, Rabenseifner
// and Gropp (2005): with p the largest power of two not above n, in step
// k = 0 … log2(p)−1 rank r exchanges its whole partial result with rank
// r XOR 2^k and reduces, so after log2 p steps every one of the p ranks holds
// the full reduction. Non-power-of-two worlds are folded in first: each extra
// rank p+i sends its buffer to rank i, which reduces it in before the
// exchanges and sends the result back after them, two more steps.
//
// Both partners of an exchange compute lower op higher, the lower rank's
// partial result first, so that every rank ends with the same bits, as with
// the trees, even where an operator is not commutative bit for bit (max of
// +0 and −0, NaN payloads); the higher rank pays a copy for it.
func (a *algorithms) recursiveDoubling(c *core.Call, t collective.Tensor, op collective.Op) error {
	n, r := c.Size(), c.Rank()
	p := 1
	for p*2 <= n {
		p *= 2
	}
	if r >= p { // an extra rank: fold in, wait for the result
		if err := c.Send(r-p, 0, t.Data); err != nil {
			return fmt.Errorf("rd fold: %w", err)
		}
		if err := c.Recv(r-p, 0, t.Data); err != nil {
			return fmt.Errorf("rd unfold: %w", err)
		}
		return nil
	}
	buf := c.Scratch(0, len(t.Data))
	extra := r + p
	if extra < n {
		if err := c.Recv(extra, 0, buf); err != nil {
			return fmt.Errorf("rd fold: %w", err)
		}
		kernels.Reduce(t.DType, op, t.Data, buf)
	}
	for k, mask := 0, 1; mask < p; k, mask = k+1, mask<<1 {
		partner := r ^ mask
		if err := c.SendRecv(0, partner, t.Data, partner, buf); err != nil {
			return fmt.Errorf("rd step %d of %d: %w", k+1, log2(p), err)
		}
		if partner > r {
			kernels.Reduce(t.DType, op, t.Data, buf)
		} else {
			kernels.Reduce(t.DType, op, buf, t.Data)
			copy(t.Data, buf)
		}
	}
	if extra < n {
		if err := c.Send(extra, 0, t.Data); err != nil {
			return fmt.Errorf("rd unfold: %w", err)
		}
	}
	return nil
}

// log2 is the base-2 logarithm of a power of two.
func log2(p int) int {
	k := 0
	for ; p > 1; p >>= 1 {
		k++
	}
	return k
}
