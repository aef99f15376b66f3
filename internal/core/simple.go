package core

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
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
	n, size := c.Size(), len(t.Data)
	bufs := c.Scratch(0, size*(n-1))
	var recvs []xfer
	for r := range n {
		if r != root {
			recvs = append(recvs, xfer{r, bufs[len(recvs)*size : (len(recvs)+1)*size]})
		}
	}
	if err := exchange(c, recvs, nil); err != nil {
		return err
	}
	for _, x := range recvs {
		kernels.Reduce(t.DType, op, t.Data, x.buf)
	}
	return nil
}

// xfer is one message of an exchange: to or from peer, of buf.
type xfer struct {
	peer int
	buf  []byte
}

// exchange posts every receive, then makes every send at once, then waits
// for the receives: a receive posted before its message arrives lands in
// place, never in the transport's queue of unexpected messages (a copy, and
// for a large message an allocation), whatever the timing, so that the time
// a point takes does not depend on which rank got going first.
func exchange(c *Call, recvs, sends []xfer) error {
	posted := make([]*Posted, len(recvs))
	for i, x := range recvs {
		posted[i] = c.PostRecv(x.peer, 0, x.buf)
	}
	fns := make([]func(*Call) error, len(sends))
	for i, x := range sends {
		fns[i] = func(c *Call) error { return c.Send(x.peer, 0, x.buf) }
	}
	err := c.Parallel(fns...)
	for k := 0; err == nil && k < len(posted); k++ {
		err = posted[k].Wait()
	}
	if err != nil {
		CancelAll(posted)
	}
	return err
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
	var recvs, sends []xfer
	for r := range n {
		if r != me {
			sends = append(sends, xfer{r, in.Data})
			recvs = append(recvs, xfer{r, out.Slice(r*per, (r+1)*per).Data})
		}
	}
	return exchange(c, recvs, sends)
}

// ReduceScatter sends block j of in to rank j, which reduces what it gets.
func (Simple) ReduceScatter(c *Call, out, in collective.Tensor, op collective.Op) error {
	n, me := c.Size(), c.Rank()
	per := out.Count()
	mine := in.Slice(me*per, (me+1)*per)
	acc := collective.Tensor{DType: in.DType, Data: c.Scratch(0, len(mine.Data))}
	copy(acc.Data, mine.Data)
	bufs := c.Scratch(1, len(mine.Data)*(n-1))
	var recvs, sends []xfer
	for r := range n {
		if r != me {
			k := len(recvs)
			sends = append(sends, xfer{r, in.Slice(r*per, (r+1)*per).Data})
			recvs = append(recvs, xfer{r, bufs[k*len(mine.Data) : (k+1)*len(mine.Data)]})
		}
	}
	if err := exchange(c, recvs, sends); err != nil {
		return err
	}
	// Reduce in rank order so every rank's result is computed alike.
	for _, x := range recvs {
		kernels.Reduce(in.DType, op, acc.Data, x.buf)
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
	var recvs []xfer
	for r := range c.Size() {
		if r != root {
			recvs = append(recvs, xfer{r, out.Slice(r*per, (r+1)*per).Data})
		}
	}
	return exchange(c, recvs, nil)
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
	var recvs, sends []xfer
	for r := range n {
		if r != me {
			sends = append(sends, xfer{r, in.Slice(r*per, (r+1)*per).Data})
			recvs = append(recvs, xfer{r, out.Slice(r*per, (r+1)*per).Data})
		}
	}
	return exchange(c, recvs, sends)
}

// Barrier is a dissemination barrier: in round k each rank signals rank+2^k
// and waits for rank−2^k, so all have arrived after ⌈log2 n⌉ rounds.
func (Simple) Barrier(c *Call) error {
	n, me := c.Size(), c.Rank()
	for k, d := uint8(0), 1; d < n; k, d = k+1, d*2 {
		if err := c.SendRecv(k, (me+d)%n, nil, (me-d+n)%n, nil); err != nil {
			return err
		}
	}
	return nil
}
