package ps

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// framePool is the pool gRPC reads HTTP/2 frame payloads into (at most
// 16 KiB each) on both sides of every connection. gRPC's default pool
// zeroes each buffer it hands out, which on a busy stream costs about a
// tenth of the CPU time; this one does not, which is safe because gRPC
// fills every buffer from the wire (io.ReadFull) before anything reads it,
// and this package's codec never asks for buffers.
var framePool mem.BufferPool = &tieredPool{}

// tieredPool keeps buffers in power-of-two size classes from 1 KiB to
// 4 MiB; other sizes are allocated and dropped.
type tieredPool struct {
	classes [tierCount]sync.Pool
}

const (
	tierMin   = 10 // 1 KiB
	tierCount = 13 // up to 4 MiB
)

func tier(n int) int {
	if n <= 1<<tierMin {
		return 0
	}
	return bits.Len(uint(n-1)) - tierMin
}

func (p *tieredPool) Get(n int) *[]byte {
	t := tier(n)
	if t >= tierCount {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.classes[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(t+tierMin))
	return &b
}

func (p *tieredPool) Put(b *[]byte) {
	c := cap(*b)
	t := tier(c)
	if t >= tierCount || c != 1<<(t+tierMin) {
		return
	}
	p.classes[t].Put(b)
}
