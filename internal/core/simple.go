package core

import (
	"github.com/distbench/distbench/collective"
)

// Simple implements every collective with plain point-to-point algorithms:
// correct for any group size, count and dtype, and the yardstick a faster
// algorithm must beat. Strategies embed it and override what they specialise.
type Simple struct{}

var _ Algorithms = Simple{}

// Block returns element range [lo, hi) of block i when count elements are cut
// into n near-equal blocks (the first count%n blocks one element longer).
func Block(count, n, i int) (lo, hi int) {
	q, r := count/n, count%n
	lo = i*q + min(i, r)
	hi = lo + q
	if i < r {
		hi++
	}
	return lo, hi
}

// AllReduce is Reduce to rank 0 followed by Broadcast from it.
func (s Simple) AllReduce(c *Call, t collective.Tensor, op collective.Op) error {
	if err := s.Reduce(c, t, 0, op); err != nil {
		return err
	}
	return s.Broadcast(c, t, 0)
}

// Reduce has every rank send to root, which reduces in rank order.
func (Simple) Reduce(c *Call, t collective.Tensor, root int, op collective.Op) error {
	if c.Rank() != root {
		return c.Send(root, 0, t.Data)
	}
	buf := c.Scratch(0, len(t.Data))
	for r := range c.Size() {
		if r == root {
			continue
		}
		if err := c.Recv(r, 0, buf); err != nil {
			return err
		}
		collective.ReduceInto(t.DType, op, t.Data, buf)
	}
	return nil
}

// Broadcast has root send to every rank.
func (Simple) Broadcast(c *Call, t collective.Tensor, root int) error {
	if c.Rank() != root {
		return c.Recv(root, 0, t.Data)
	}
	var fns []func(*Call) error
	for r := range c.Size() {
		if r != root {
			fns = append(fns, func(c *Call) error { return c.Send(r, 0, t.Data) })
		}
	}
	return c.Parallel(fns...)
}

// AllGather exchanges blocks with every peer at once.
func (Simple) AllGather(c *Call, out, in collective.Tensor) error {
	n, me := c.Size(), c.Rank()
	per := in.Count()
	copy(out.Slice(me*per, (me+1)*per).Data, in.Data)
	fns := make([]func(*Call) error, 0, 2*(n-1))
	for r := range n {
		if r == me {
			continue
		}
		fns = append(fns,
			func(c *Call) error { return c.Send(r, 0, in.Data) },
			func(c *Call) error { return c.Recv(r, 0, out.Slice(r*per, (r+1)*per).Data) })
	}
	return c.Parallel(fns...)
}

// ReduceScatter sends block j of in to rank j, which reduces what it gets.
func (Simple) ReduceScatter(c *Call, out, in collective.Tensor, op collective.Op) error {
	n, me := c.Size(), c.Rank()
	per := out.Count()
	mine := in.Slice(me*per, (me+1)*per)
	acc := collective.Tensor{DType: in.DType, Data: c.Scratch(0, len(mine.Data))}
	copy(acc.Data, mine.Data)
	bufs := c.Scratch(1, len(mine.Data)*(n-1))
	fns := make([]func(*Call) error, 0, 2*(n-1))
	k := 0
	for r := range n {
		if r == me {
			continue
		}
		buf := bufs[k*len(mine.Data) : (k+1)*len(mine.Data)]
		k++
		fns = append(fns,
			func(c *Call) error { return c.Send(r, 0, in.Slice(r*per, (r+1)*per).Data) },
			func(c *Call) error { return c.Recv(r, 0, buf) })
	}
	if err := c.Parallel(fns...); err != nil {
		return err
	}
	// Reduce in rank order so every rank's result is computed alike.
	k = 0
	for r := range n {
		if r == me {
			continue
		}
		collective.ReduceInto(in.DType, op, acc.Data, bufs[k*len(mine.Data):(k+1)*len(mine.Data)])
		k++
	}
	copy(out.Data, acc.Data)
	return nil
}

// Gather has every rank send to root, which receives straight into out.
func (Simple) Gather(c *Call, out, in collective.Tensor, root int) error {
	if c.Rank() != root {
		return c.Send(root, 0, in.Data)
	}
	per := in.Count()
	copy(out.Slice(root*per, (root+1)*per).Data, in.Data)
	var fns []func(*Call) error
	for r := range c.Size() {
		if r != root {
			fns = append(fns, func(c *Call) error { return c.Recv(r, 0, out.Slice(r*per, (r+1)*per).Data) })
		}
	}
	return c.Parallel(fns...)
}

// Scatter has root send each rank its block.
func (Simple) Scatter(c *Call, out, in collective.Tensor, root int) error {
	if c.Rank() != root {
		return c.Recv(root, 0, out.Data)
	}
	per := out.Count()
	var fns []func(*Call) error
	for r := range c.Size() {
		if r != root {
			fns = append(fns, func(c *Call) error { return c.Send(r, 0, in.Slice(r*per, (r+1)*per).Data) })
		}
	}
	if err := c.Parallel(fns...); err != nil {
		return err
	}
	copy(out.Data, in.Slice(root*per, (root+1)*per).Data)
	return nil
}

// AllToAll exchanges block pairs with every peer at once. When in and out
// share memory, in is copied first so no block is overwritten before it is sent.
func (Simple) AllToAll(c *Call, out, in collective.Tensor) error {
	n, me := c.Size(), c.Rank()
	per := in.Count() / n
	if Overlap(out.Data, in.Data) {
		src := c.Scratch(0, len(in.Data))
		copy(src, in.Data)
		in = collective.Tensor{DType: in.DType, Data: src}
	}
	copy(out.Slice(me*per, (me+1)*per).Data, in.Slice(me*per, (me+1)*per).Data)
	fns := make([]func(*Call) error, 0, 2*(n-1))
	for r := range n {
		if r == me {
			continue
		}
		fns = append(fns,
			func(c *Call) error { return c.Send(r, 0, in.Slice(r*per, (r+1)*per).Data) },
			func(c *Call) error { return c.Recv(r, 0, out.Slice(r*per, (r+1)*per).Data) })
	}
	return c.Parallel(fns...)
}

// Barrier is a dissemination barrier: in round k each rank signals rank+2^k
// and waits for rank−2^k, so all have arrived after ⌈log2 n⌉ rounds.
func (Simple) Barrier(c *Call) error {
	n, me := c.Size(), c.Rank()
	for k, d := uint8(0), 1; d < n; k, d = k+1, d*2 {
		to, from := (me+d)%n, (me-d+n)%n
		err := c.Parallel(
			func(c *Call) error { return c.Send(to, k, nil) },
			func(c *Call) error { return c.Recv(from, k, nil) })
		if err != nil {
			return err
		}
	}
	return nil
}
