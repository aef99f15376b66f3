package kernels

import (
	"fmt"
	"math"
	"sync"

	"github.com/distbench/distbench/collective"
)

// Reduce combines src into dst element-wise: dst[i] = dst[i] op src[i].
// Both must hold the same number of elements of dt. Half types are computed in
// float32 and rounded once. Avg reduces as Sum (see [Divide]), and so does
// MulSum, whose pre-multiplication is the caller's (see [Scale]).
func Reduce(dt collective.DType, op collective.Op, dst, src []byte) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("kernels: Reduce of %d and %d bytes", len(dst), len(src)))
	}
	if op == collective.Avg || op == collective.MulSum {
		op = collective.Sum
	}
	if reduceSIMD(dt, op, dst, src) {
		return
	}
	reduceGeneric(dt, op, dst, src)
}

// reduceGeneric is Reduce in plain Go: the path on machines without the
// vector kernels, and the reference they are tested against bit for bit.
func reduceGeneric(dt collective.DType, op collective.Op, dst, src []byte) {
	if op == collective.Avg || op == collective.MulSum {
		op = collective.Sum
	}
	switch dt {
	case collective.Float32:
		reduceNative(op, view[float32](dst), view[float32](src))
	case collective.Float64:
		reduceNative(op, view[float64](dst), view[float64](src))
	case collective.Int32:
		reduceNative(op, view[int32](dst), view[int32](src))
	case collective.Int64:
		reduceNative(op, view[int64](dst), view[int64](src))
	case collective.Uint8:
		reduceNative(op, dst, src)
	case collective.Int8:
		reduceNative(op, view[int8](dst), view[int8](src))
	case collective.Uint32:
		reduceNative(op, view[uint32](dst), view[uint32](src))
	case collective.Uint64:
		reduceNative(op, view[uint64](dst), view[uint64](src))
	case collective.Float8E4M3:
		reduceFloat8(fp8Pairs[0][op](), dst, src)
	case collective.Float8E5M2:
		reduceFloat8(fp8Pairs[1][op](), dst, src)
	case collective.Float16:
		reduceFloat16(op, view[uint16](dst), view[uint16](src))
	case collective.BFloat16:
		reduceBFloat16(op, view[uint16](dst), view[uint16](src))
	default:
		panic(fmt.Sprintf("kernels: Reduce of invalid dtype %d", dt))
	}
}

type number interface {
	~float32 | ~float64 | ~int8 | ~int32 | ~int64 | ~uint8 | ~uint32 | ~uint64
}

// reduceNative keeps the operator switch outside the loops so that each loop
// is a tight, bounds-check-free pass the compiler can schedule well.
func reduceNative[T number](op collective.Op, dst, src []T) {
	src = src[:len(dst)]
	switch op {
	case collective.Sum:
		i := 0
		for ; i+4 <= len(dst); i += 4 {
			d, s := dst[i:i+4:i+4], src[i:i+4:i+4]
			d[0] += s[0]
			d[1] += s[1]
			d[2] += s[2]
			d[3] += s[3]
		}
		for ; i < len(dst); i++ {
			dst[i] += src[i]
		}
	case collective.Prod:
		for i := range dst {
			dst[i] *= src[i]
		}
	case collective.Max:
		for i := range dst {
			// NaN propagates, as in torch: a comparison with NaN is false.
			if src[i] > dst[i] || src[i] != src[i] {
				dst[i] = src[i]
			}
		}
	case collective.Min:
		for i := range dst {
			if src[i] < dst[i] || src[i] != src[i] {
				dst[i] = src[i]
			}
		}
	default:
		panic(fmt.Sprintf("collective: reduce with invalid op %d", op))
	}
}

// combine applies op to two float32 values; NaN propagates through max and min.
func combine(op collective.Op, a, b float32) float32 {
	switch op {
	case collective.Sum:
		return a + b
	case collective.Prod:
		return a * b
	case collective.Max:
		if b > a || b != b {
			return b
		}
		return a
	default: // Min
		if b < a || b != b {
			return b
		}
		return a
	}
}

// reduceBFloat16 widens and narrows inline: a bfloat16 is the top half of a
// float32, so widening is a shift and rounding an add. The Sum loop has no
// calls at all, since it is what gradients use.
func reduceBFloat16(op collective.Op, dst, src []uint16) {
	src = src[:len(dst)]
	if op == collective.Sum {
		for i := range dst {
			f := math.Float32frombits(uint32(dst[i])<<16) + math.Float32frombits(uint32(src[i])<<16)
			b := math.Float32bits(f)
			if b&0x7fffffff > 0x7f800000 {
				dst[i] = uint16(b>>16) | 0x40 // keep NaN a NaN
				continue
			}
			dst[i] = uint16((b + 0x7fff + (b>>16)&1) >> 16)
		}
		return
	}
	for i := range dst {
		dst[i] = collective.Float32ToBFloat16(combine(op, collective.BFloat16ToFloat32(dst[i]), collective.BFloat16ToFloat32(src[i])))
	}
}

// float16Table widens every binary16 value; 256 KiB, built on first use.
var float16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = collective.Float16ToFloat32(uint16(i))
	}
	return &t
})

func reduceFloat16(op collective.Op, dst, src []uint16) {
	src = src[:len(dst)]
	w := float16Table()
	for i := range dst {
		dst[i] = collective.Float32ToFloat16(combine(op, w[dst[i]], w[src[i]]))
	}
}

// fp8Pairs holds, for each FP8 format (E4M3, E5M2) and op, the result of
// every pair of operands, computed in float32 and rounded once as the half
// types are (and NCCL's fp8 reductions): 64 KiB a table, built on first
// use, which makes a reduction one load an element instead of a widening,
// a rounding and a narrowing (10 MB/s).
var fp8Pairs = func() (t [2][collective.Min + 1]func() *[1 << 16]uint8) {
	formats := []struct {
		widen  func(uint8) float32
		narrow func(float32) uint8
	}{
		{collective.Float8E4M3ToFloat32, collective.Float32ToFloat8E4M3},
		{collective.Float8E5M2ToFloat32, collective.Float32ToFloat8E5M2},
	}
	for f, fm := range formats {
		for op := collective.Sum; op <= collective.Min; op++ {
			t[f][op] = sync.OnceValue(func() *[1 << 16]uint8 {
				var pairs [1 << 16]uint8
				for i := range pairs {
					pairs[i] = fm.narrow(combine(op, fm.widen(uint8(i>>8)), fm.widen(uint8(i))))
				}
				return &pairs
			})
		}
	}
	return t
}()

// reduceFloat8 sets dst[i] to the pair table's entry for (dst[i], src[i]).
func reduceFloat8(pairs *[1 << 16]uint8, dst, src []byte) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = pairs[uint16(dst[i])<<8|uint16(src[i])]
	}
}

// Divide divides every element by n, finishing an [Avg] reduction.
// Integer division truncates toward zero.
func Divide(t collective.Tensor, n int) {
	switch t.DType {
	case collective.Float32:
		// Divide rather than multiply by 1/n: the reciprocal is rounded, the
		// quotient is correctly rounded (and exact when it can be).
		s := t.Float32s()
		for i := range s {
			s[i] /= float32(n)
		}
	case collective.Float64:
		s := t.Float64s()
		for i := range s {
			s[i] /= float64(n)
		}
	case collective.Int32:
		s := t.Int32s()
		for i := range s {
			s[i] /= int32(n)
		}
	case collective.Int64:
		s := t.Int64s()
		for i := range s {
			s[i] /= int64(n)
		}
	case collective.Uint8:
		for i := range t.Data {
			t.Data[i] /= uint8(n)
		}
	case collective.Int8:
		divideInts(view[int8](t.Data), int8(n))
	case collective.Uint32:
		divideInts(view[uint32](t.Data), uint32(n))
	case collective.Uint64:
		divideInts(view[uint64](t.Data), uint64(n))
	case collective.Float8E4M3:
		for i := range t.Data {
			t.Data[i] = collective.Float32ToFloat8E4M3(collective.Float8E4M3ToFloat32(t.Data[i]) / float32(n))
		}
	case collective.Float8E5M2:
		for i := range t.Data {
			t.Data[i] = collective.Float32ToFloat8E5M2(collective.Float8E5M2ToFloat32(t.Data[i]) / float32(n))
		}
	case collective.Float16:
		s := t.Uint16s()
		for i := range s {
			s[i] = collective.Float32ToFloat16(collective.Float16ToFloat32(s[i]) / float32(n))
		}
	case collective.BFloat16:
		s := t.Uint16s()
		for i := range s {
			s[i] = collective.Float32ToBFloat16(collective.BFloat16ToFloat32(s[i]) / float32(n))
		}
	}
}

func divideInts[T ~int8 | ~uint32 | ~uint64](s []T, n T) {
	for i := range s {
		s[i] /= n
	}
}

// Scale multiplies every element by k, in the tensor's own arithmetic
// (integers wrap, the narrow float types compute in float32 and round
// once): MulSum's pre-multiplication by [collective.PremulScalar].
func Scale(t collective.Tensor, k float64) {
	if k == 1 {
		return
	}
	switch t.DType {
	case collective.Float32:
		scaleNative(view[float32](t.Data), float32(k))
	case collective.Float64:
		scaleNative(view[float64](t.Data), k)
	case collective.Int8:
		scaleNative(view[int8](t.Data), int8(k))
	case collective.Uint8:
		scaleNative(t.Data, uint8(k))
	case collective.Int32:
		scaleNative(view[int32](t.Data), int32(k))
	case collective.Uint32:
		scaleNative(view[uint32](t.Data), uint32(k))
	case collective.Int64:
		scaleNative(view[int64](t.Data), int64(k))
	case collective.Uint64:
		scaleNative(view[uint64](t.Data), uint64(k))
	default: // float16, bfloat16, fp8: through float64, rounded once
		for i := range t.Count() {
			t.SetFloat64(i, t.Float64At(i)*k)
		}
	}
}

func scaleNative[T number](s []T, k T) {
	for i := range s {
		s[i] *= k
	}
}
