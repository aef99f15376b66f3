package ps

import (
	"sync"

	"github.com/distbench/distbench/collective"
)

// accPool recycles a server's accumulators. Benchmarks and training repeat
// the same tensor sizes round after round, so buffers are kept by exact
// size, a few per size, up to a total. A size that no round has asked for
// in the last accPoolIdle gets is dropped: without that, a job whose sizes
// vary (a sweep, a soak) would keep a gigabyte of buffers for sizes it
// never uses again. Buffers are 8-byte aligned (every dtype's view is
// valid) and not zeroed: a round writes every byte before anyone reads it.
type accPool struct {
	mu    sync.Mutex
	free  map[int]*accSize
	bytes int
	gets  uint64 // the pool's clock: one tick per get
}

// accSize is the free list of one size and when it was last asked for.
type accSize struct {
	bufs     [][]byte
	lastUsed uint64
}

const (
	accPoolPerSize = 4
	accPoolBytes   = 1 << 30
	accPoolIdle    = 256
)

func (p *accPool) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets++
	if p.gets%accPoolIdle == 0 {
		p.dropIdle()
	}
	if s := p.free[n]; s != nil {
		s.lastUsed = p.gets
		if l := s.bufs; len(l) > 0 {
			b := l[len(l)-1]
			l[len(l)-1] = nil
			s.bufs = l[:len(l)-1]
			p.bytes -= n
			return b
		}
	}
	return collective.NewTensor(collective.Uint8, n).Data
}

func (p *accPool) put(b []byte) {
	n := len(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[int]*accSize{}
	}
	s := p.free[n]
	if s == nil {
		s = &accSize{lastUsed: p.gets}
		p.free[n] = s
	}
	if len(s.bufs) >= accPoolPerSize || p.bytes+n > accPoolBytes {
		return
	}
	s.bufs = append(s.bufs, b)
	p.bytes += n
}

// dropIdle forgets the sizes not asked for in the last accPoolIdle gets.
func (p *accPool) dropIdle() {
	for n, s := range p.free {
		if p.gets-s.lastUsed >= accPoolIdle {
			p.bytes -= n * len(s.bufs)
			delete(p.free, n)
		}
	}
}

// pooled is how many bytes the pool holds.
func (p *accPool) pooled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}
