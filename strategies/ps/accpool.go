package ps

import (
	"math/bits"
	"sync"

	"github.com/distbench/distbench/collective"
)

// accPool recycles a server's accumulators. Benchmarks and training repeat
// the same tensor sizes round after round, and a soak or a sweep varies
// them, so buffers are kept by size class (eight classes per doubling,
// at most 12.5% larger than asked for), a few per class, up to a total:
// varied sizes then share buffers instead of each allocating its own. A
// class that no round has asked for in the last accPoolIdle gets is
// dropped, so sizes a job never uses again do not pin memory. Buffers are
// 8-byte aligned (every dtype's view is valid) and not zeroed: a round
// writes every byte before anyone reads it.
type accPool struct {
	mu    sync.Mutex
	free  map[int]*accClass // by class capacity
	bytes int
	gets  uint64 // the pool's clock: one tick per get
}

// accClass is the free list of one size class and when it was last asked for.
type accClass struct {
	bufs     [][]byte
	lastUsed uint64
}

const (
	accPoolPerClass = 4
	accPoolBytes    = 1 << 30
	accPoolIdle     = 256
)

// sizeClass is the capacity get allocates for n bytes: n rounded up to a
// multiple of 8 up to 64 bytes, above that to one of eight evenly spaced
// steps between consecutive powers of two.
func sizeClass(n int) int {
	if n <= 64 {
		return (n + 7) &^ 7
	}
	step := 1 << (bits.Len(uint(n-1)) - 4)
	return (n + step - 1) &^ (step - 1)
}

// get returns a buffer of length n whose capacity is n's size class.
func (p *accPool) get(n int) []byte {
	c := sizeClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets++
	if p.gets%accPoolIdle == 0 {
		p.dropIdle()
	}
	if s := p.free[c]; s != nil {
		s.lastUsed = p.gets
		if l := s.bufs; len(l) > 0 {
			b := l[len(l)-1]
			l[len(l)-1] = nil
			s.bufs = l[:len(l)-1]
			p.bytes -= c
			return b[:n]
		}
	} else {
		if p.free == nil {
			p.free = map[int]*accClass{}
		}
		// Remember the class was asked for, so that its first put keeps the
		// buffer even if the class then sees no get for a while.
		p.free[c] = &accClass{lastUsed: p.gets}
	}
	return collective.NewTensor(collective.Uint8, c).Data[:n]
}

// put returns a buffer from get. Buffers of any other capacity are left to
// the garbage collector.
func (p *accPool) put(b []byte) {
	c := cap(b)
	if c == 0 || sizeClass(c) != c {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.free[c]
	if s == nil {
		return // dropped as idle while the buffer was out
	}
	if len(s.bufs) >= accPoolPerClass || p.bytes+c > accPoolBytes {
		return
	}
	s.bufs = append(s.bufs, b[:c])
	p.bytes += c
}

// dropIdle forgets the classes not asked for in the last accPoolIdle gets.
func (p *accPool) dropIdle() {
	for c, s := range p.free {
		if p.gets-s.lastUsed >= accPoolIdle {
			p.bytes -= c * len(s.bufs)
			delete(p.free, c)
		}
	}
}

// pooled is how many bytes the pool holds.
func (p *accPool) pooled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}
