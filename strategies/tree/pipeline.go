package tree

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// node is one rank's place in one tree (shapes.Node): its parent (−1 at
// the root) and its children, in the order their contributions are reduced.
type node = shapes.Node

// flow moves the chunks of buf through one tree on one channel, pipelined:
//
//   - up: every chunk of every child is reduced into buf, children in a
//     fixed order; the reduced chunk goes to the parent. At the root buf
//     then holds the reduction.
//   - down: every chunk is received from the parent into buf and forwarded
//     to each child; the root forwards what it has (its reduction, when
//     the flow also goes up).
//
// Up and down together are a tree allreduce in which chunk k flows down
// while chunks after it still flow up. A flow compiles to a core.Schedule
// (see add), which runs each send as soon as the chunk it carries is in, so
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
}

func (f *flow) chunks() int { return (len(f.buf) + f.chunk - 1) / f.chunk }

func (f *flow) rng(k int) []byte {
	return f.buf[k*f.chunk : min((k+1)*f.chunk, len(f.buf))]
}

// run runs flows at once, as one schedule, and returns the first error;
// base(i) is the first Scratch index of flow i's staging slots (see add).
func run(c *core.Call, base func(i int) int, flows ...*flow) error {
	s := c.Schedule(0, 0) // each flow sets its dtype and op below
	var where []place     // per step
	for i, f := range flows {
		s.DType, s.Op = f.dt, f.op
		f.add(c, s, base(i), &where)
	}
	s.Where = func(i core.Step) string {
		p := where[i]
		return fmt.Sprintf("%s %s, chunk %d of %d", p.f.name, p.dir, p.k, p.f.chunks())
	}
	return c.Run(s)
}

// place is where in a flow a step is, for errors.
type place struct {
	f   *flow
	dir string // "up" or "down"
	k   int    // chunk
}

// add appends the flow's steps to s; staging slots are Scratch buffers from
// index base on, shapes.TreeSlots per child. It must be called on the operation's
// goroutine, as Scratch must.
//
// The first child's chunks are reduced as they are read (RecvReduce, every
// receive posted at once: a chunk comes up only once, and this rank sends it
// on only after all its children's are in); the other children's land in
// staging slots, a receive posted as a slot frees, and are reduced once the
// first child's chunk is in, so that the order of the reduction, and with
// it every bit of the result, is the same in every run. Every chunk's
// receive from the parent is posted at once too: it comes down only after
// this rank sent it up (when the flow also goes up), so nothing else writes
// its place meanwhile.
func (f *flow) add(c *core.Call, s *core.Schedule, base int, where *[]place) {
	nk := f.chunks()
	if nk == 0 {
		return
	}
	note := func(st core.Step, dir string, k int) {
		for len(*where) <= int(st) {
			*where = append(*where, place{})
		}
		(*where)[st] = place{f, dir, k}
	}
	// ready[k] is the step after which chunk k is reduced (or, with no
	// children, simply present): None when it is at once.
	ready := make([]core.Step, nk)
	for k := range ready {
		ready[k] = core.None
	}
	if f.up && len(f.Children) > 0 {
		size, nslots := min(f.chunk, len(f.buf)), min(shapes.TreeSlots, nk)
		for k := range nk {
			ready[k] = s.RecvReduce(f.Children[0], f.channel, f.rng(k))
			note(ready[k], "up", k)
		}
		for i, child := range f.Children[1:] {
			reduced := make([]core.Step, nk)
			for k := range nk {
				slot := c.Scratch(base+i*shapes.TreeSlots+k%nslots, size)[:len(f.rng(k))]
				free := core.None
				if k >= nslots {
					free = reduced[k-nslots]
				}
				in := s.Recv(child, f.channel, slot, free)
				note(in, "up", k)
				reduced[k] = s.Reduce(f.rng(k), slot, ready[k], in)
				note(reduced[k], "up", k)
				ready[k] = reduced[k]
			}
		}
	}
	var down []core.Step // receives from the parent
	if f.down && f.Parent >= 0 {
		down = make([]core.Step, nk)
		for k := range nk {
			down[k] = s.Recv(f.Parent, f.channel, f.rng(k))
			note(down[k], "down", k)
		}
	}
	if f.up && f.Parent >= 0 {
		for k := range nk {
			credit := core.None
			if down != nil && f.window > 0 && k >= f.window {
				credit = down[k-f.window]
			}
			note(s.Send(f.Parent, f.channel, f.rng(k), ready[k], credit), "up", k)
		}
	}
	if !f.down {
		return
	}
	for _, child := range f.Children {
		for k := range nk {
			after := ready[k]
			if down != nil {
				after = down[k]
			}
			note(s.Send(child, f.channel, f.rng(k), after), "down", k)
		}
	}
}
