package ps

import (
	"sync"

	"github.com/distbench/distbench/collective"
)

// accPool recycles a server's accumulators. Benchmarks and training repeat
// the same tensor sizes round after round, so buffers are kept by exact
// size, a few per size, up to a total; anything else goes to the garbage
// collector. Buffers are 8-byte aligned (every dtype's view is valid) and
// not zeroed: a round writes every byte before anyone reads it.
type accPool struct {
	mu    sync.Mutex
	free  map[int][][]byte
	bytes int
}

const (
	accPoolPerSize = 4
	accPoolBytes   = 1 << 30
)

func (p *accPool) get(n int) []byte {
	p.mu.Lock()
	if l := p.free[n]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[n] = l[:len(l)-1]
		p.bytes -= n
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return collective.NewTensor(collective.Uint8, n).Data
}

func (p *accPool) put(b []byte) {
	n := len(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[int][][]byte{}
	}
	if len(p.free[n]) >= accPoolPerSize || p.bytes+n > accPoolBytes {
		return
	}
	p.free[n] = append(p.free[n], b)
	p.bytes += n
}
