package kernels

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/distbench/distbench/collective"
)

// The vector kernels must give exactly what the Go loops give. Each test
// here runs Reduce (the kernel where there is one) against reduceGeneric
// on the same inputs and compares the bits.

// specialBits are the values most likely to tell two implementations apart:
// zeros of both signs, infinities, NaNs of both signs with different payloads
// (quiet and signalling), subnormals, the largest finite values and, for the
// half types, sums that land exactly halfway between two results.
var specialBits = map[collective.DType][]uint64{
	collective.Float32: {
		0, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000,
		0x7fc00000, 0xffc00000, 0x7fc00001, 0xffc12345, 0x7f800001, 0xff812345, 0x7fffffff, 0xffffffff,
		0x7f7fffff, 0xff7fffff, 0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x80800000,
		0x3f808000, 0x3f818000, 0x3f808001, 0x477fe000, 0x477ff000, 0x33000000, 0x33800000,
	},
	collective.Float64: {
		0, 1 << 63, 0x3ff0000000000000, 0xbff0000000000000, 0x7ff0000000000000, 0xfff0000000000000,
		0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000000000001, 0xfff8deadbeef0000,
		0x7ff0000000000001, 0xfff0000000000123, 0x7fffffffffffffff, 0xffffffffffffffff,
		0x7fefffffffffffff, 0xffefffffffffffff, 1, 0x8000000000000001, 0x000fffffffffffff, 0x0010000000000000,
	},
	collective.Float16: {
		0, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7e01, 0xfeab, 0x7c01, 0xfd55,
		0x7fff, 0xffff, 0x7bff, 0xfbff, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x8400, 0x3c01, 0x1400, 0x7800,
	},
	collective.BFloat16: {
		0, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7fc1, 0xffd5, 0x7f81, 0xff81,
		0x7fff, 0xffff, 0x7f7f, 0xff7f, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f81, 0x3b80, 0x4000,
	},
	collective.Int32: {0, 1, 0xffffffff, 0x7fffffff, 0x80000000},
	collective.Int64: {0, 1, 1<<64 - 1, 1<<63 - 1, 1 << 63},
	collective.Uint8: {0, 1, 0x7f, 0x80, 0xff},
}

// randomBits draws an element: a special value, arbitrary bits (NaNs with
// every payload, subnormals), or an ordinary number of modest size, whose
// sums round in every way.
func randomBits(r *rand.Rand, dt collective.DType) uint64 {
	switch r.IntN(4) {
	case 0:
		s := specialBits[dt]
		return s[r.IntN(len(s))]
	case 1:
		return r.Uint64()
	}
	v := r.NormFloat64() * math.Ldexp(1, r.IntN(20)-10)
	switch dt {
	case collective.Float32:
		return uint64(math.Float32bits(float32(v)))
	case collective.Float64:
		return math.Float64bits(v)
	case collective.Float16:
		return uint64(collective.Float32ToFloat16(float32(v)))
	case collective.BFloat16:
		return uint64(collective.Float32ToBFloat16(float32(v)))
	}
	return r.Uint64()
}

func putBits(dt collective.DType, b []byte, i int, v uint64) {
	switch dt.Size() {
	case 1:
		b[i] = byte(v)
	case 2:
		binary.NativeEndian.PutUint16(b[2*i:], uint16(v))
	case 4:
		binary.NativeEndian.PutUint32(b[4*i:], uint32(v))
	case 8:
		binary.NativeEndian.PutUint64(b[8*i:], v)
	}
}

func getBits(dt collective.DType, b []byte, i int) uint64 {
	switch dt.Size() {
	case 1:
		return uint64(b[i])
	case 2:
		return uint64(binary.NativeEndian.Uint16(b[2*i:]))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b[4*i:]))
	}
	return binary.NativeEndian.Uint64(b[8*i:])
}

// checkReduce reduces src into dst with Reduce, and into a copy of dst
// with reduceGeneric, and fails at the first element whose bits differ.
func checkReduce(t testing.TB, dt collective.DType, op collective.Op, dst, src []byte) {
	t.Helper()
	want := bytes.Clone(dst)
	in := bytes.Clone(dst)
	reduceGeneric(dt, genericOp(op), want, src)
	Reduce(dt, op, dst, src)
	if bytes.Equal(dst, want) {
		return
	}
	n := len(dst) / dt.Size()
	for i := range n {
		d, s := getBits(dt, in, i), getBits(dt, src, i)
		got, w := getBits(dt, dst, i), getBits(dt, want, i)
		if got != w && !nanOrderOnly(dt, op, d, s, got, w) {
			t.Fatalf("%s %s of %d elements: element %d: %#x op %#x = %#x, want %#x (generic)",
				dt, op, n, i, d, s, got, w)
		}
	}
	if tail := n * dt.Size(); !bytes.Equal(dst[tail:], want[tail:]) {
		t.Fatalf("%s %s: trailing partial element changed: %x, want %x", dt, op, dst[tail:], want[tail:])
	}
}

// nanOrderOnly allows the one difference from the Go loop that is the Go
// loop's own. When both operands of a float add or multiply are NaN, x86
// returns the first, and which one that is in the Go loops is up to the
// compiler: float + and * are commutative to it, and register allocation
// picks. The kernels follow the normal build (dst first for float32, float64
// and bfloat16 Sum, src first for float16 Sum and Prod), and plain go test
// holds them to it; but -race and -fuzz instrument the code, and there the
// compiler may choose the other way. Then the kernel must still give the
// normal build's NaN and the Go loop the other operand's.
func nanOrderOnly(dt collective.DType, op collective.Op, d, s, got, want uint64) bool {
	if !instrumented() || (op != collective.Sum && op != collective.Prod && op != collective.Avg && op != collective.MulSum) {
		return false
	}
	switch dt {
	case collective.Float32:
		return isNaN32(d) && isNaN32(s) && got == d|1<<22 && want == s|1<<22
	case collective.Float64:
		return isNaN64(d) && isNaN64(s) && got == d|1<<51 && want == s|1<<51
	case collective.BFloat16:
		return isNaN32(d<<16) && isNaN32(s<<16) && got == d|0x40 && want == s|0x40
	case collective.Float16:
		nan := func(h uint64) bool { return h&0x7fff > 0x7c00 }
		return nan(d) && nan(s) && got == s&0x8000|0x7e00 && want == d&0x8000|0x7e00
	}
	return false
}

// instrumented reports a build made with -race or -fuzz.
func instrumented() bool {
	if raceEnabled {
		return true
	}
	f, w := flag.Lookup("test.fuzz"), flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() != "" || w != nil && w.Value.String() == "true"
}

// genericOp is what Reduce hands reduceGeneric: Avg and MulSum reduce as Sum.
func genericOp(op collective.Op) collective.Op {
	if op == collective.Avg || op == collective.MulSum {
		return collective.Sum
	}
	return op
}

func isNaN32(b uint64) bool { return uint32(b)&0x7fffffff > 0x7f800000 }
func isNaN64(b uint64) bool { return b&(1<<63-1) > 0x7ff0000000000000 }

// misaligned returns n bytes at offset off in a fresh buffer, so that the
// kernels see every alignment.
func misaligned(n, off int) []byte {
	return make([]byte, n+off+32)[off : off+n : off+n]
}

func TestReduceMatchesGeneric(t *testing.T) {
	logKernels(t)
	r := rand.New(rand.NewPCG(1, 2))
	lengths := []int{}
	for n := range 68 {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 1<<16+3)
	for _, dt := range collective.DTypes() {
		if _, ok := specialBits[dt]; !ok {
			continue // int8, uint32, uint64 and fp8 have no vector loops: Reduce is reduceGeneric
		}
		for _, op := range collective.Ops() {
			for _, n := range lengths {
				offsets := []int{0, 1, 2, 3, 4, 7, 8, 13, 16, 31}
				if n > 1000 {
					offsets = []int{0, 3}
				}
				for _, off := range offsets {
					dst, src := misaligned(n*dt.Size(), off), misaligned(n*dt.Size(), (off*7)%32)
					for i := range n {
						putBits(dt, dst, i, randomBits(r, dt))
						putBits(dt, src, i, randomBits(r, dt))
					}
					checkReduce(t, dt, op, dst, src)
				}
			}
			// dst and src the same slice: x op= x.
			x := make([]byte, 100*dt.Size())
			for i := range 100 {
				putBits(dt, x, i, randomBits(r, dt))
			}
			want := bytes.Clone(x)
			reduceGeneric(dt, genericOp(op), want, bytes.Clone(want))
			Reduce(dt, op, x, x)
			if !bytes.Equal(x, want) {
				t.Errorf("%s %s with dst == src differs from the Go loop", dt, op)
			}
		}
	}
}

// TestReduceSpecialPairs reduces every pair of special values, each
// against each in both positions.
func TestReduceSpecialPairs(t *testing.T) {
	for _, dt := range collective.DTypes() {
		sp := specialBits[dt]
		n := len(sp) * len(sp)
		dst, src := make([]byte, n*dt.Size()), make([]byte, n*dt.Size())
		for _, op := range collective.Ops() {
			for i := range n {
				putBits(dt, dst, i, sp[i/len(sp)])
				putBits(dt, src, i, sp[i%len(sp)])
			}
			checkReduce(t, dt, op, dst, src)
		}
	}
}

// TestReduceAllHalves reduces every 16-bit pattern, in both
// positions, against the special values and some random ones.
func TestReduceAllHalves(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []collective.DType{collective.Float16, collective.BFloat16} {
		others := specialBits[dt]
		for range 16 {
			others = append(others, randomBits(r, dt)&0xffff)
		}
		all, fixed := make([]byte, 2<<16), make([]byte, 2<<16)
		for _, op := range collective.Ops()[:4] {
			for _, v := range others {
				for i := range 1 << 16 {
					putBits(dt, all, i, uint64(i))
					putBits(dt, fixed, i, v)
				}
				checkReduce(t, dt, op, all, fixed)
				for i := range 1 << 16 {
					putBits(dt, all, i, uint64(i))
				}
				checkReduce(t, dt, op, fixed, all)
			}
		}
	}
}

func TestReduceTailDoesNotAllocate(t *testing.T) {
	dst, src := make([]byte, 100), make([]byte, 100)
	for _, dt := range collective.DTypes() {
		if n := testing.AllocsPerRun(10, func() { Reduce(dt, collective.Sum, dst, src) }); n != 0 {
			t.Errorf("%s: %v allocations per Reduce", dt, n)
		}
	}
}

func FuzzReduce(f *testing.F) {
	special := func(dt collective.DType, rot int) []byte {
		sp := specialBits[dt]
		b := make([]byte, len(sp)*dt.Size())
		for i := range sp {
			putBits(dt, b, i, sp[(i+rot)%len(sp)])
		}
		return b
	}
	for _, dt := range collective.DTypes() {
		f.Add(special(dt, 0), special(dt, 3), uint8(0))
		f.Add(special(dt, 1), special(dt, 0), uint8(5))
	}
	f.Add(bytes.Repeat([]byte{0xff, 0x7f, 0x01, 0x80}, 40), bytes.Repeat([]byte{0x00, 0xc0, 0x7f, 0xff}, 40), uint8(17))
	f.Fuzz(func(t *testing.T, d, s []byte, off uint8) {
		n := min(len(d), len(s))
		for _, dt := range collective.DTypes() {
			for _, op := range collective.Ops() {
				dst := misaligned(n, int(off%32))
				copy(dst, d)
				checkReduce(t, dt, op, dst, s[:n])
			}
		}
	})
}

func logKernels(t *testing.T) {
	var names []string
	for _, dt := range collective.DTypes() {
		for _, op := range collective.Ops()[:4] {
			if hasKernel(dt, op) {
				names = append(names, fmt.Sprintf("%s/%s", dt, op))
			}
		}
	}
	t.Logf("%s kernels: %v", kernelName, names)
}

// Name names what Reduce runs, for results' environment
// records: the plain loops exactly when there is no kernel for float32 sum.
func TestName(t *testing.T) {
	got := Name()
	switch {
	case !hasKernel(collective.Float32, collective.Sum) && got != "go":
		t.Errorf("Name() = %q without kernels, want go", got)
	case hasKernel(collective.Float32, collective.Sum) && !strings.HasPrefix(got, "avx2"):
		t.Errorf("Name() = %q with kernels, want avx2…", got)
	case hasKernel(collective.Float16, collective.Sum) != strings.HasSuffix(got, "+f16c"):
		t.Errorf("Name() = %q, float16 kernels: %v", got, hasKernel(collective.Float16, collective.Sum))
	}
}
