package ps

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/kernels"
)

// copySegs copies the concatenation of segs into dst, which must be at least
// as long, and returns the bytes copied.
func copySegs(dst []byte, segs [][]byte) int {
	n := 0
	for _, s := range segs {
		n += copy(dst[n:], s)
	}
	return n
}

// reduceSegs combines the concatenation of segs into dst element-wise with
// op, straight from the received buffers: gRPC delivers a message as a list
// of HTTP/2 frame payloads (16 KiB each) whose boundaries fall anywhere, so
// an element cut in two is reassembled in a small carry and reduced alone.
// Views of unaligned memory are fine for these pointer-free element types
// (the runtime's checkptr allows them; amd64 and arm64 load them).
func reduceSegs(dt collective.DType, op collective.Op, dst []byte, segs [][]byte) {
	es := dt.Size()
	var carry [8]byte
	nc, pos := 0, 0
	for _, s := range segs {
		if nc > 0 {
			n := copy(carry[nc:es], s)
			nc += n
			s = s[n:]
			if nc < es {
				continue
			}
			kernels.Reduce(dt, op, dst[pos:pos+es], carry[:es])
			pos += es
			nc = 0
		}
		whole := len(s) / es * es
		if whole > 0 {
			kernels.Reduce(dt, op, dst[pos:pos+whole], s[:whole])
			pos += whole
		}
		nc = copy(carry[:], s[whole:])
	}
}
