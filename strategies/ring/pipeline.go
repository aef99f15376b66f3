package ring

import (
	"sync"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// pass moves segments of buf around the ring for a number of steps. At step
// g a rank sends segment sendSeg(g) to its right and receives segment
// recvSeg(g) from its left, reducing it into buf for the first reduceSteps
// steps and storing it for the rest. The schedule must satisfy
// sendSeg(g) == recvSeg(g−1): what a rank forwards is what it just received.
//
// Each segment is cut into chunks that are pipelined: the sender forwards
// chunk c of step g as soon as the receiver has finished chunk c of step g−1,
// while the receiver is already reading the next chunk into one of a few
// staging slots and a third goroutine reduces the one before.
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

// slots is the number of staging buffers between receiving and reducing:
// enough to keep one receive posted while another chunk is being reduced.
const slots = 4

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

// progress counts chunks the receiver has finished, in schedule order.
type progress struct {
	mu   sync.Mutex
	cond *sync.Cond
	done int
	dead bool
}

func (pr *progress) advance() {
	pr.mu.Lock()
	pr.done++
	pr.mu.Unlock()
	pr.cond.Broadcast()
}

func (pr *progress) kill() {
	pr.mu.Lock()
	pr.dead = true
	pr.mu.Unlock()
	pr.cond.Broadcast()
}

// await blocks until at least n chunks are done; false if the receiver died.
func (pr *progress) await(n int) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for pr.done < n && !pr.dead {
		pr.cond.Wait()
	}
	return pr.done >= n
}

type received struct {
	lo, hi int
	slot   []byte // nil when the chunk was received straight into buf
	index  int
}

func (p *pass) run(c *core.Call) error {
	n, r := c.Size(), c.Rank()
	right, left := mod(r+1, n), mod(r-1, n)

	// start[g] is the index, in receive order, of step g's first chunk.
	start := make([]int, p.steps+1)
	for g := range p.steps {
		start[g+1] = start[g] + p.chunks(p.recvSeg(g))
	}
	pr := &progress{}
	pr.cond = sync.NewCond(&pr.mu)

	var free chan []byte
	if p.reduceSteps > 0 {
		free = make(chan []byte, slots)
		for i := range slots {
			free <- c.Scratch(1+i, p.chunk)
		}
	}
	filled := make(chan received, slots)

	send := func(c *core.Call) error {
		for g := range p.steps {
			s := p.sendSeg(g)
			for ch := range p.chunks(s) {
				if g > 0 && !pr.await(start[g-1]+ch+1) {
					return nil // the receiver failed and reports why
				}
				lo, hi := p.chunkRange(s, ch)
				if err := c.Send(right, 0, p.buf[lo:hi]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	post := func(c *core.Call) (err error) {
		defer close(filled)
		defer func() {
			if err != nil {
				pr.kill()
			}
		}()
		for g := range p.steps {
			s := p.recvSeg(g)
			for ch := range p.chunks(s) {
				lo, hi := p.chunkRange(s, ch)
				if g >= p.reduceSteps {
					if err := c.Recv(left, 0, p.buf[lo:hi]); err != nil {
						return err
					}
					filled <- received{lo: lo, hi: hi}
					continue
				}
				var slot []byte
				select {
				case slot = <-free:
				case <-c.Ctx().Done():
					return c.Ctx().Err()
				}
				if err := c.Recv(left, 0, slot[:hi-lo]); err != nil {
					return err
				}
				filled <- received{lo: lo, hi: hi, slot: slot}
			}
		}
		return nil
	}
	reduce := func(c *core.Call) error {
		for rc := range filled {
			if rc.slot != nil {
				collective.ReduceInto(p.dt, p.op, p.buf[rc.lo:rc.hi], rc.slot[:rc.hi-rc.lo])
				free <- rc.slot
			}
			pr.advance()
		}
		return nil
	}
	return c.Parallel(send, post, reduce)
}
