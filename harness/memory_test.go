package harness

import (
	"testing"
	"unsafe"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
)

// TestBufferBytes holds job.Point.BufferBytes to what each benchmark's alloc really
// allocates, on every rank, so that the memory check counts what runs.
func TestBufferBytes(t *testing.T) {
	for _, name := range job.Collectives() {
		if p2pNames[name] {
			continue // measureP2P allocates a send and a receive buffer: 2 × the size
		}
		for _, np := range []int{1, 3, 4} {
			for _, inplace := range []bool{false, true} {
				for _, dt := range []collective.DType{collective.Uint8, collective.Float64} {
					p := job.Point{Collective: name, Bytes: int64(24 * dt.Size()), DType: dt.String(), Op: "sum", InPlace: inplace}
					want := p.BufferBytes(np)
					for r := range np {
						inst := &instance{n: np, r: r, dt: dt, count: p.Count(dt, np), inplace: inplace}
						benchmarks[name].alloc(inst)
						if got := allocated(inst.in.Data, inst.out.Data); got != want {
							t.Errorf("%s np %d rank %d in-place %v %s: alloc takes %d bytes, BufferBytes says %d", name, np, r, inplace, dt, got, want)
						}
					}
				}
			}
		}
	}
}

// allocated is the bytes of memory a and b take, once where one lies in
// the other (an in-place form's view).
func allocated(a, b []byte) int64 {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(b) == 0 {
		return int64(len(a))
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if pb >= pa && pb+uintptr(len(b)) <= pa+uintptr(len(a)) {
		return int64(len(a))
	}
	return int64(len(a) + len(b))
}
