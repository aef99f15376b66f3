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
}

// EagerLimit is the largest segment the eager path handles: below it a
// step's transfer costs less than waking the pipeline's goroutines, so the
// steps run one after another on the calling goroutine, each posting its
// receive, sending, then waiting. Measured in-process over loopback TCP at
// np 2 (BenchmarkAllReduceTCP): 4 KiB went from 105 µs pipelined to the
// figure in the package's benchmark notes.
const EagerLimit = 64 << 10

func (p *pass) run(c *core.Call) error {
	biggest := 0
	for _, s := range p.segs {
		biggest = max(biggest, s[1]-s[0])
	}
	if biggest <= EagerLimit {
		return p.runEager(c)
	}
	return p.runPipelined(c)
}

// runEager runs the steps in order: post the receive, send, wait, reduce.
// Sending before the receive completes cannot deadlock: every connection has
// a reader that drains it whether or not a receive is posted.
func (p *pass) runEager(c *core.Call) error {
	n, r := c.Size(), c.Rank()
	right, left := core.Mod(r+1, n), core.Mod(r-1, n)
	for g := range p.steps {
		rs, ss := p.segs[p.recvSeg(g)], p.segs[p.sendSeg(g)]
		dst := p.buf[rs[0]:rs[1]]
		if g < p.reduceSteps {
			dst = c.Scratch(1, rs[1]-rs[0])
		}
		rv := c.PostRecv(left, 0, dst)
		if err := c.Send(right, 0, p.buf[ss[0]:ss[1]]); err != nil {
			return err
		}
		if err := rv.Wait(); err != nil {
			return err
		}
		if g < p.reduceSteps {
			collective.ReduceInto(p.dt, p.op, p.buf[rs[0]:rs[1]], dst)
		}
	}
	return nil
}

// runPipelined runs three goroutines: the sender forwards chunk c of step g
// once chunk c of step g−1 is done; the receiver keeps up to `slots`
// receives posted ahead, in schedule order, so chunks land in place (in a
// staging slot for reduce steps, in buf itself for copy steps); the reducer
// folds staged chunks into buf and marks them done.
func (p *pass) runPipelined(c *core.Call) error {
	n, r := c.Size(), c.Rank()
	right, left := core.Mod(r+1, n), core.Mod(r-1, n)

	// start[g] is the index, in receive order, of step g's first chunk.
	start := make([]int, p.steps+1)
	var items []received
	for g := range p.steps {
		s := p.recvSeg(g)
		start[g+1] = start[g] + p.chunks(s)
		for ch := range p.chunks(s) {
			lo, hi := p.chunkRange(s, ch)
			items = append(items, received{lo: lo, hi: hi})
		}
	}
	reduceItems := start[min(p.reduceSteps, p.steps)]
	pr := &progress{}
	pr.cond = sync.NewCond(&pr.mu)

	free := make(chan []byte, slots)
	for i := range slots {
		free <- c.Scratch(1+i, p.chunk)
	}
	filled := make(chan received, len(items))

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
	receive := func(c *core.Call) (err error) {
		defer close(filled)
		defer func() {
			if err != nil {
				pr.kill()
			}
		}()
		posted := make([]*core.Posted, len(items))
		next := 0
		post := func(block bool) bool {
			it := &items[next]
			if next < reduceItems {
				select {
				case it.slot = <-free:
				default:
					if !block {
						return false
					}
					select {
					case it.slot = <-free:
					case <-c.Ctx().Done():
						return false
					}
				}
				posted[next] = c.PostRecv(left, 0, it.slot[:it.hi-it.lo])
			} else {
				posted[next] = c.PostRecv(left, 0, p.buf[it.lo:it.hi])
			}
			next++
			return true
		}
		for k := range items {
			for next < len(items) && next < k+slots {
				if !post(next == k) {
					break
				}
			}
			if next <= k {
				return c.Ctx().Err()
			}
			if err := posted[k].Wait(); err != nil {
				return err
			}
			filled <- items[k]
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
	return c.Parallel(send, receive, reduce)
}
