//go:build amd64 && !purego

package kernels

import (
	"github.com/distbench/distbench/collective"
	"golang.org/x/sys/cpu"
)

// kernel names one of the AVX2 loops in reduce_amd64.s.
type kernel uint8

const (
	noKernel kernel = iota
	addF32
	mulF32
	maxF32
	minF32
	addF64
	mulF64
	maxF64
	minF64
	addI32
	addI64
	addBF16
	addF16
	mulF16
	maxF16
	minF16
)

// kernelBlock is the unit every kernel works in: the assembly loops only see
// whole 64-byte blocks, and reduceSIMD pads the rest.
const kernelBlock = 64

// kernelName tells the benchmarks what to call the fast path.
const kernelName = "avx2"

// loops maps a dtype and an op to its loop; noKernel leaves it to Go.
var loops = func() (k [collective.Uint8 + 1][collective.Min + 1]kernel) {
	// cpu.X86.HasAVX2 is only set when the OS saves the YMM registers too.
	if !cpu.X86.HasAVX2 {
		return k
	}
	k[collective.Float32] = [collective.Min + 1]kernel{collective.Sum: addF32, collective.Prod: mulF32, collective.Max: maxF32, collective.Min: minF32}
	k[collective.Float64] = [collective.Min + 1]kernel{collective.Sum: addF64, collective.Prod: mulF64, collective.Max: maxF64, collective.Min: minF64}
	k[collective.Int32][collective.Sum] = addI32
	k[collective.Int64][collective.Sum] = addI64
	k[collective.BFloat16][collective.Sum] = addBF16
	// x/sys/cpu does not report F16C, so ask CPUID ourselves.
	if hasF16C() {
		k[collective.Float16] = [collective.Min + 1]kernel{collective.Sum: addF16, collective.Prod: mulF16, collective.Max: maxF16, collective.Min: minF16}
	}
	return k
}()

// Name names the vector code [Reduce] runs on this machine:
// "avx2", "avx2+f16c" (float16 too), or "go" for the plain loops. Results
// record it, because a reduction-bound point measured with one is not
// comparable with one measured with another.
func Name() string {
	switch {
	case loops[collective.Float16][collective.Sum] != noKernel:
		return "avx2+f16c"
	case loops[collective.Float32][collective.Sum] != noKernel:
		return "avx2"
	}
	return "go"
}

func kernelFor(dt collective.DType, op collective.Op) kernel {
	if int(dt) >= len(loops) || int(op) >= len(loops[0]) {
		return noKernel
	}
	return loops[dt][op]
}

// hasKernel reports whether Reduce has an assembly loop for dt and op.
func hasKernel(dt collective.DType, op collective.Op) bool { return kernelFor(dt, op) != noKernel }

// reduceSIMD does Reduce with an assembly loop, reporting false if there
// is none for dt and op. op is never Avg here.
func reduceSIMD(dt collective.DType, op collective.Op, dst, src []byte) bool {
	k := kernelFor(dt, op)
	if k == noKernel {
		return false
	}
	// Like the Go loops, ignore a trailing partial element.
	whole := len(dst) - len(dst)%dt.Size()
	raceAccess(dst[:whole], src[:whole])
	n := whole &^ (kernelBlock - 1)
	if n > 0 {
		k.run(dst[:n], src[:n])
	}
	if n < whole {
		// The tail goes through the same kernel in a zero-padded block rather
		// than through the Go loop: one code path for every element, and no
		// 256 KiB float16 table built just for a tail.
		var d, s [kernelBlock]byte
		copy(d[:], dst[n:whole])
		copy(s[:], src[n:whole])
		k.run(d[:], s[:])
		copy(dst[n:whole], d[:])
	}
	return true
}

// run calls the kernel directly (not through a func value) so that escape
// analysis sees the //go:noescape and the tail blocks stay on the stack.
func (k kernel) run(dst, src []byte) {
	switch k {
	case addF32:
		addF32AVX2(dst, src)
	case mulF32:
		mulF32AVX2(dst, src)
	case maxF32:
		maxF32AVX2(dst, src)
	case minF32:
		minF32AVX2(dst, src)
	case addF64:
		addF64AVX2(dst, src)
	case mulF64:
		mulF64AVX2(dst, src)
	case maxF64:
		maxF64AVX2(dst, src)
	case minF64:
		minF64AVX2(dst, src)
	case addI32:
		addI32AVX2(dst, src)
	case addI64:
		addI64AVX2(dst, src)
	case addBF16:
		addBF16AVX2(dst, src)
	case addF16:
		addF16AVX2(dst, src)
	case mulF16:
		mulF16AVX2(dst, src)
	case maxF16:
		maxF16AVX2(dst, src)
	case minF16:
		minF16AVX2(dst, src)
	}
}

// hasF16C reports CPUID.1:ECX.F16C. Only consulted once AVX2 (and so OS
// support for the YMM state) is known.
func hasF16C() bool

// Each kernel computes dst op= src over len(dst) bytes, a multiple of 64, with
// results bit-identical to the Go loops in reduce.go.

//go:noescape
func addF32AVX2(dst, src []byte)

//go:noescape
func mulF32AVX2(dst, src []byte)

//go:noescape
func maxF32AVX2(dst, src []byte)

//go:noescape
func minF32AVX2(dst, src []byte)

//go:noescape
func addF64AVX2(dst, src []byte)

//go:noescape
func mulF64AVX2(dst, src []byte)

//go:noescape
func maxF64AVX2(dst, src []byte)

//go:noescape
func minF64AVX2(dst, src []byte)

//go:noescape
func addI32AVX2(dst, src []byte)

//go:noescape
func addI64AVX2(dst, src []byte)

//go:noescape
func addBF16AVX2(dst, src []byte)

//go:noescape
func addF16AVX2(dst, src []byte)

//go:noescape
func mulF16AVX2(dst, src []byte)

//go:noescape
func maxF16AVX2(dst, src []byte)

//go:noescape
func minF16AVX2(dst, src []byte)
