package collective

import (
	"math"
	"sync"
)

// fp8Format describes one of the OCP FP8 formats: exponent and mantissa
// bits, bias, and whether the top exponent holds infinities and NaNs
// (E5M2, IEEE-like) or only the all-ones NaN (E4M3, "fn": finite).
type fp8Format struct {
	expBits, mantBits, bias int
	ieee                    bool
	maxFinite               float32
}

var (
	fp8E4M3 = fp8Format{expBits: 4, mantBits: 3, bias: 7, ieee: false, maxFinite: 448}
	fp8E5M2 = fp8Format{expBits: 5, mantBits: 2, bias: 15, ieee: true, maxFinite: 57344}
)

func (f fp8Format) decode(b uint8) float32 {
	sign := float32(1)
	if b&0x80 != 0 {
		sign = -1
	}
	exp := int(b>>f.mantBits) & (1<<f.expBits - 1)
	mant := int(b) & (1<<f.mantBits - 1)
	top := 1<<f.expBits - 1
	switch {
	case f.ieee && exp == top && mant == 0:
		return sign * float32(math.Inf(1))
	case f.ieee && exp == top, !f.ieee && exp == top && mant == 1<<f.mantBits-1:
		return float32(math.NaN())
	case exp == 0: // subnormal: mant × 2^(1-bias-mantBits)
		return sign * float32(math.Ldexp(float64(mant), 1-f.bias-f.mantBits))
	}
	return sign * float32(math.Ldexp(float64(1<<f.mantBits+mant), exp-f.bias-f.mantBits))
}

// encode rounds v to the nearest value of the format (ties to even),
// saturating at the largest finite one (CUDA's __NV_SATFINITE, which the
// __nv_fp8 constructors use); a NaN stays a NaN.
func (f fp8Format) encode(v float32) uint8 {
	var sign uint8
	if math.Signbit(float64(v)) {
		sign = 0x80
	}
	nan := uint8(0x7f) // E4M3's only NaN; also an E5M2 NaN
	if v != v {
		return sign | nan
	}
	a := math.Abs(float64(v))
	if a >= float64(f.maxFinite) {
		return sign | f.encodeExact(f.maxFinite)
	}
	// The spacing of representable values around a: 2^(e-mantBits) in the
	// normal binade of a, never below the subnormals' spacing.
	minExp := 1 - f.bias
	e := max(math.Ilogb(a), minExp)
	ulp := math.Ldexp(1, e-f.mantBits)
	q := math.RoundToEven(a / ulp)
	r := q * ulp
	if r >= float64(f.maxFinite) {
		r = float64(f.maxFinite)
	}
	return sign | f.encodeExact(float32(r))
}

// encodeExact encodes a non-negative finite value the format holds exactly.
func (f fp8Format) encodeExact(v float32) uint8 {
	if v == 0 {
		return 0
	}
	a := float64(v)
	e := math.Ilogb(a)
	if e < 1-f.bias { // subnormal
		return uint8(math.Ldexp(a, f.bias-1+f.mantBits))
	}
	mant := int(math.Ldexp(a, f.mantBits-e)) - 1<<f.mantBits
	return uint8((e+f.bias)<<f.mantBits | mant)
}

// fp8Tables widen every byte of each format; built on first use.
var fp8Tables = sync.OnceValue(func() *[2][256]float32 {
	var t [2][256]float32
	for i := range 256 {
		t[0][i] = fp8E4M3.decode(uint8(i))
		t[1][i] = fp8E5M2.decode(uint8(i))
	}
	return &t
})

// Float8E4M3ToFloat32 widens an OCP FP8 E4M3 value.
func Float8E4M3ToFloat32(b uint8) float32 { return fp8Tables()[0][b] }

// Float8E5M2ToFloat32 widens an OCP FP8 E5M2 value.
func Float8E5M2ToFloat32(b uint8) float32 { return fp8Tables()[1][b] }

// Float32ToFloat8E4M3 narrows to E4M3, rounding to nearest even and
// saturating at ±448.
func Float32ToFloat8E4M3(v float32) uint8 { return fp8E4M3.encode(v) }

// Float32ToFloat8E5M2 narrows to E5M2, rounding to nearest even and
// saturating at ±57344.
func Float32ToFloat8E5M2(v float32) uint8 { return fp8E5M2.encode(v) }
