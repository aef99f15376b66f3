package tree

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/kernels"
)

// node is one rank's place in one tree: its parent (−1 at the root) and its
// children, in the order their contributions are reduced.
type node struct {
	parent   int
	children []int
}

// slots is the number of staging buffers per child between receiving a
// chunk and reducing it: enough to keep a receive posted while another
// chunk is reduced, as in the ring.
const slots = 4

// flow moves the chunks of buf through one tree on one channel, pipelined:
//
//   - up: every chunk of every child is received into a staging slot and
//     reduced into buf, children in a fixed order; the reduced chunk goes to
//     the parent. At the root buf then holds the reduction.
//   - down: every chunk is received from the parent into buf and forwarded
//     to each child; the root forwards what it has (its reduction, when
//     the flow also goes up).
//
// Up and down together are a tree allreduce in which chunk k flows down
// while chunks after it still flow up. Each child's receive, the reduction,
// the send to the parent, the receive from the parent and each child's send
// run on their own goroutine, handing chunks on through token channels, so
// that a slow link stalls only what depends on it.
type flow struct {
	node
	name    string // for errors: "tree 0", "broadcast", ...
	channel uint8
	dt      collective.DType
	op      collective.Op
	buf     []byte
	chunk   int // bytes, a whole number of elements
	up      bool
	down    bool
	// window, when up and down are both set and it is positive, bounds the
	// chunks a rank sends up beyond those that have come back down: the
	// parent cannot have consumed more, and the rest would wait in its
	// transport's queue of unexpected messages, a copy of the buffer in
	// the worst case. It must cover a round trip up and down the tree,
	// or the pipeline stalls.
	window int

	// stopped is set by a goroutine that gave up waiting for another
	// because the operation was cancelled; see run.
	stopped atomic.Bool
}

func (f *flow) chunks() int { return (len(f.buf) + f.chunk - 1) / f.chunk }

func (f *flow) rng(k int) []byte {
	return f.buf[k*f.chunk : min((k+1)*f.chunk, len(f.buf))]
}

// errorf says where in the flow an error happened.
func (f *flow) errorf(dir string, k int, err error) error {
	return fmt.Errorf("%s %s, chunk %d of %d: %w", f.name, dir, k, f.chunks(), err)
}

// tokens is a count of chunks handed from one goroutine to another; its
// capacity is the number of chunks, so that handing on never blocks.
type tokens chan struct{}

// await takes a value from ch, or returns false once the operation is
// cancelled. A goroutine that gives up this way returns no error: the one it
// was waiting for, blocked in the network, fails too and says where.
func await[T any](c *core.Call, f *flow, ch <-chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	case <-c.Ctx().Done():
		f.stopped.Store(true)
		var zero T
		return zero, false
	}
}

// run runs flows at once and returns the first error. Should every
// goroutine that failed have merely given up waiting (which the network's
// own deadline errors make unlikely), it still reports the cancellation.
func run(c *core.Call, base func(i int) int, flows ...*flow) error {
	var fns []func(*core.Call) error
	for i, f := range flows {
		fns = append(fns, f.tasks(c, base(i))...)
	}
	if err := c.Parallel(fns...); err != nil {
		return err
	}
	for _, f := range flows {
		if f.stopped.Load() {
			return fmt.Errorf("%s: stopped: %w", f.name, context.Cause(c.Ctx()))
		}
	}
	return nil
}

// tasks returns the flow's goroutines, to be run with Call.Parallel (see
// run); staging slots are Scratch buffers from index base on, slots per
// child. It must be called on the operation's goroutine, as Scratch must.
func (f *flow) tasks(c *core.Call, base int) []func(*core.Call) error {
	nk := f.chunks()
	if nk == 0 {
		return nil
	}
	var fns []func(*core.Call) error

	// toParent has a token per chunk ready to go up; toChild[i] one per
	// chunk ready to go down to child i.
	var toParent tokens
	var toChild []tokens
	if f.down {
		toChild = make([]tokens, len(f.children))
		for i := range toChild {
			toChild[i] = make(tokens, nk)
		}
	}
	ready := func() { // chunk reduced (or, with no children, simply present)
		if f.parent >= 0 {
			toParent <- struct{}{}
			return
		}
		for _, t := range toChild {
			t <- struct{}{}
		}
	}
	if f.up && f.parent >= 0 {
		toParent = make(tokens, nk)
	}
	var credit tokens // a token per chunk come down, when the window binds
	if f.up && f.down && f.parent >= 0 && f.window > 0 && nk > f.window {
		credit = make(tokens, nk)
	}

	switch {
	case f.up && len(f.children) > 0:
		fns = append(fns, f.reduceTasks(c, base, nk, ready)...)
	case f.up || f.parent < 0:
		// A leaf's chunks, and a broadcast root's, are ready at once.
		for range nk {
			ready()
		}
	}
	if f.up && f.parent >= 0 {
		fns = append(fns, func(c *core.Call) error {
			for k := range nk {
				if _, ok := await(c, f, toParent); !ok {
					return nil
				}
				if credit != nil && k >= f.window {
					if _, ok := await(c, f, credit); !ok {
						return nil
					}
				}
				if err := c.Send(f.parent, f.channel, f.rng(k)); err != nil {
					return f.errorf("up", k, err)
				}
			}
			return nil
		})
	}
	if !f.down {
		return fns
	}
	if f.parent >= 0 {
		fns = append(fns, func(c *core.Call) error {
			// Every chunk's receive is posted at once, so that each
			// lands in place however early it comes. A chunk comes down
			// only after this rank sent it up (when the flow goes up
			// too), so nothing else writes its place meanwhile. They are
			// posted on this goroutine's Call (see postAll).
			down := postAll(nk, func(k int) *core.Posted { return c.PostRecv(f.parent, f.channel, f.rng(k)) })
			defer core.CancelAll(down) // none left after a normal end
			for k := range nk {
				if err := down[k].Wait(); err != nil {
					return f.errorf("down", k, err)
				}
				for _, t := range toChild {
					t <- struct{}{}
				}
				if credit != nil {
					credit <- struct{}{}
				}
			}
			return nil
		})
	}
	for i, child := range f.children {
		fns = append(fns, func(c *core.Call) error {
			for k := range nk {
				if _, ok := await(c, f, toChild[i]); !ok {
					return nil
				}
				if err := c.Send(child, f.channel, f.rng(k)); err != nil {
					return f.errorf("down", k, err)
				}
			}
			return nil
		})
	}
	return fns
}

// reduceTasks reduces every child's chunks into buf in child order,
// calling ready after each chunk. The first child's chunks are reduced as
// they are read (core.Call.PostRecvReduce, every receive posted at once: a
// chunk comes up only once, and this rank sends it on only after all its
// children's are in); the other children's wait in staging slots until the
// first child's chunk is in, so that the order of the reduction, and with
// it every bit of the result, is the same in every run.
func (f *flow) reduceTasks(c *core.Call, base, nk int, ready func()) []func(*core.Call) error {
	size, nslots := min(f.chunk, len(f.buf)), min(slots, nk)
	rest := f.children[1:]
	free := make([]chan []byte, len(rest))
	filled := make([]chan []byte, len(rest))
	var fns []func(*core.Call) error
	for i, child := range rest {
		free[i], filled[i] = make(chan []byte, nslots), make(chan []byte, nslots)
		for s := range nslots {
			free[i] <- c.Scratch(base+i*slots+s, size)
		}
		fns = append(fns, func(c *core.Call) error {
			for k := range nk {
				slot, ok := await(c, f, free[i])
				if !ok {
					return nil
				}
				slot = slot[:len(f.rng(k))]
				if err := c.Recv(child, f.channel, slot); err != nil {
					return f.errorf("up", k, err)
				}
				filled[i] <- slot
			}
			return nil
		})
	}
	fns = append(fns, func(c *core.Call) error {
		first := postAll(nk, func(k int) *core.Posted {
			return c.PostRecvReduce(f.children[0], f.channel, f.rng(k), f.dt, f.op)
		})
		defer core.CancelAll(first) // none left after a normal end
		for k := range nk {
			if err := first[k].Wait(); err != nil {
				return f.errorf("up", k, err)
			}
			dst := f.rng(k)
			for i := range rest {
				slot, ok := await(c, f, filled[i])
				if !ok {
					return nil
				}
				kernels.Reduce(f.dt, f.op, dst, slot)
				free[i] <- slot[:cap(slot)]
			}
			ready()
		}
		return nil
	})
	return fns
}

// postAll posts nk receives. A task posts its receives on the Call that
// Parallel gave it, not the operation's: a posted receive waits on the
// context of the Call that posted it, and only the task's is cancelled when
// another task fails. Posted on the operation's, a rank whose link to a
// dead peer failed went on waiting for a live peer that waited in turn for
// it, every rank until the operation's deadline.
func postAll(nk int, post func(k int) *core.Posted) []*core.Posted {
	posted := make([]*core.Posted, nk)
	for k := range nk {
		posted[k] = post(k)
	}
	return posted
}
