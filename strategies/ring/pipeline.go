package ring

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// pass moves segments of buf around the ring for a number of steps. At step
// g a rank sends segment sendSeg(g) to its right and receives segment
// recvSeg(g) from its left, reducing it into buf for the first reduceSteps
// steps and storing it for the rest. The schedule must satisfy
// sendSeg(g) == recvSeg(g−1): what a rank forwards is what it just received.
//
// Each segment is cut into chunks that are pipelined: chunk c of step g is
// forwarded as soon as chunk c of step g−1 has arrived, while the
// connection's reader is already taking in the chunks after it.
type pass struct {
	dt          collective.DType
	op          collective.Op
	buf         []byte
	segs        [][2]int
	steps       int
	reduceSteps int
	sendSeg     func(g int) int
	recvSeg     func(g int) int
	chunk       int
}

// chunks returns the number of chunks of segment s.
func (p *pass) chunks(s int) int {
	n := p.segs[s][1] - p.segs[s][0]
	if n == 0 {
		return 0
	}
	return (n + p.chunk - 1) / p.chunk
}

func (p *pass) chunkRange(s, c int) (lo, hi int) {
	lo = p.segs[s][0] + c*p.chunk
	return lo, min(lo+p.chunk, p.segs[s][1])
}

// run posts every receive of the pass before its first send, in the order
// the left neighbour sends them, so that every chunk lands in place: reduce
// steps are reduced into buf as they are read (core.Call.PostRecvReduce, no
// staging buffer), copy steps are read straight into buf. Then one loop
// sends, in the wavefront order of [pass.order], each chunk after the chunk
// it forwards has arrived. Receiving and
// reducing run on the connection's reader meanwhile, so the pass needs no
// goroutines of its own, and a small message costs one post, one send and
// one wait per step.
//
// Posting a receive into a region of buf before the step that fills it is
// safe: a message for that region can only arrive after it has gone once
// around the ring, which it does only after this rank's last send from the
// region.
func (p *pass) run(c *core.Call) error {
	n, r := c.Size(), c.Rank()
	right, left := core.Mod(r+1, n), core.Mod(r-1, n)

	// recvAt[g][ch] is the step that receives chunk ch of step g.
	recvOrder, sendOrder := p.order(p.recvSeg), p.order(p.sendSeg)
	recvAt := make([][]core.Step, p.steps)
	for g := range p.steps {
		recvAt[g] = make([]core.Step, p.chunks(p.recvSeg(g)))
	}
	s := c.Schedule(p.dt, p.op)
	for _, it := range recvOrder {
		lo, hi := p.chunkRange(p.recvSeg(it.g), it.ch)
		if it.g < p.reduceSteps {
			recvAt[it.g][it.ch] = s.RecvReduce(left, 0, p.buf[lo:hi])
		} else {
			recvAt[it.g][it.ch] = s.Recv(left, 0, p.buf[lo:hi])
		}
	}
	for _, it := range sendOrder {
		after := core.None
		if it.g > 0 {
			after = recvAt[it.g-1][it.ch]
		}
		lo, hi := p.chunkRange(p.sendSeg(it.g), it.ch)
		s.Send(right, 0, p.buf[lo:hi], after)
	}
	s.Where = func(i core.Step) string { // the receives come first
		it := recvOrder[min(int(i), len(recvOrder)-1)]
		if int(i) >= len(recvOrder) {
			it = sendOrder[int(i)-len(recvOrder)]
		}
		return fmt.Sprintf("step %d of %d", it.g+1, p.steps)
	}
	return c.Run(s)
}

// item is one chunk of one step of a pass.
type item struct{ g, ch int }

// waveLag is how many chunks a step runs behind the step before it in the
// order every rank sends: chunk ch of step g goes out around the time chunk
// ch+lag of step g−1 does, not after all of step g−1. The chunk it forwards
// arrived (and was reduced) a chunk or two ago, so it is still in cache when
// the kernel copies it into the socket, where sending step by step reads it
// back from memory a whole segment later. A lag of 1 forwards soonest, but a
// rank must then have received chunk ch from its left neighbour by the time
// it has sent one more chunk: large chunks, each hundreds of microseconds on
// the wire, cover that wait; small ones do not, and take a lag of 2, which
// keeps one more chunk in flight. Chosen by running `distbench run --inplace
// in` with lags 1, 2 and 3 (docs/tuning.md, ring-wave-lag).
func (p *pass) waveLag() int {
	if p.chunk >= shapes.RingLagOneChunk {
		return 1
	}
	return 2
}

// order lists the chunks of every step of segments seg(g) in the order
// every rank sends them: by ch + lag·g (lag: [pass.waveLag]), later steps
// first on a tie.
// Every chunk's predecessor (the one it forwards, ch of step g−1) comes
// earlier in the left neighbour's order, so no rank waits on one that its
// neighbour has yet to send; and since left's send order over its segments
// equals this rank's receive order over the same segments, one channel
// carries the whole pass in order.
func (p *pass) order(seg func(g int) int) []item {
	var items []item
	for g := range p.steps {
		for ch := range p.chunks(seg(g)) {
			items = append(items, item{g, ch})
		}
	}
	lag := p.waveLag()
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.ch+lag*a.g, b.ch+lag*b.g), cmp.Compare(b.g, a.g))
	})
	return items
}

// chain is one rank's part in a pipelined chain (broadcast, reduce): pieces
// arrive from prev, each copied into its place or, with reduce, reduced into
// it with op, and are forwarded to next as they arrive. The head of the
// chain (prev < 0) only sends; its tail (next < 0) only receives. As in
// run, every receive is posted before the first send, and the connection's
// reader does the receiving and reducing.
func chain(c *core.Call, prev, next int, pieces [][]byte, reduce bool, dt collective.DType, op collective.Op) error {
	s := c.Schedule(dt, op)
	for _, b := range pieces {
		in := core.None
		switch {
		case prev < 0:
		case reduce:
			in = s.RecvReduce(prev, 0, b)
		default:
			in = s.Recv(prev, 0, b)
		}
		if next >= 0 {
			s.Send(next, 0, b, in)
		}
	}
	return c.Run(s)
}

// cut splits b into pieces of at most chunk bytes.
func cut(b []byte, chunk int) [][]byte {
	pieces := make([][]byte, 0, (len(b)+chunk-1)/chunk)
	for lo := 0; lo < len(b); lo += chunk {
		pieces = append(pieces, b[lo:min(lo+chunk, len(b))])
	}
	return pieces
}
