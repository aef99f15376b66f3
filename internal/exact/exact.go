// Package exact makes inputs whose reductions are exact in every dtype, and
// counts the elements of a result that differ from the exact answer. The
// conformance suite and `distbench run --check` share it, so a #wrong of 0
// means the same thing in both.
package exact

import (
	"github.com/distbench/distbench/collective"
)

// Value is the input element i of rank r for a reduction with op over n
// ranks: a small integer whose reduction is exact in every dtype. Exported so
// that `distbench run --check` uses the same inputs as the suite.
func Value(op collective.Op, dt collective.DType, n, r, i int) float64 {
	if fp8(dt) {
		// Two or three mantissa bits hold few integers exactly (e5m2: 0 to
		// 8, then every other), so every partial sum must stay small: one
		// rank in n contributes to each element of a sum.
		one := 0.0
		if (r+i)%n == 0 {
			one = 1
		}
		switch op {
		case collective.Sum, collective.MulSum:
			return one
		case collective.Avg:
			return float64(n) * one // exact while n is (every n up to 8)
		}
	}
	switch op {
	case collective.Prod:
		if (r+i)%3 == 0 {
			return 2 // at most 2^8 over 8 ranks: exact in every float type; uint8 wraps, see Expected
		}
		return 1
	case collective.Max, collective.Min:
		v := float64((r*7+i*3)%11 - 5)
		if dt.Unsigned() {
			v += 5
		}
		return v
	case collective.Avg:
		if dt == collective.Int8 {
			return float64(n * ((r + i) % 2)) // a sum within int8's 127 up to n = 11
		}
		return float64(n * ((r + i) % 4))
	default: // Sum, MulSum
		return float64((r + 1 + i) % 5)
	}
}

func fp8(dt collective.DType) bool { return dt == collective.Float8E4M3 || dt == collective.Float8E5M2 }

// Expected is the reduction of Value over ranks 0..n-1 at element i.
func Expected(op collective.Op, dt collective.DType, n, i int) float64 {
	acc := Value(op, dt, n, 0, i) * premul(op, 0)
	for r := 1; r < n; r++ {
		v := Value(op, dt, n, r, i)
		switch op {
		case collective.Sum, collective.Avg:
			acc += v
		case collective.MulSum:
			acc += v * premul(op, r)
		case collective.Prod:
			acc *= v
		case collective.Max:
			acc = max(acc, v)
		case collective.Min:
			acc = min(acc, v)
		}
	}
	if op == collective.Avg {
		acc /= float64(n)
	}
	if dt.Integer() && op != collective.Avg {
		// Integer arithmetic wraps (uint8's 2^8 is 0, int8's 2^7 is
		// -128), and wraps the same whatever the order of the ranks.
		t := collective.NewTensor(dt, 1)
		t.SetFloat64(0, acc)
		acc = t.Float64At(0)
	}
	return acc
}

// premul is MulSum's factor for rank r, and 1 for every other op.
func premul(op collective.Op, r int) float64 {
	if op != collective.MulSum {
		return 1
	}
	return collective.PremulScalar(r)
}

// Fill sets t[j] = Value(op, dt, n, r, offset+j).
func Fill(t collective.Tensor, op collective.Op, n, r, offset int) {
	for j := range t.Count() {
		t.SetFloat64(j, Value(op, t.DType, n, r, offset+j))
	}
}

// CountWrong counts elements of t that differ from Expected(op, dt, n, offset+j).
func CountWrong(t collective.Tensor, op collective.Op, n, offset int) int64 {
	var wrong int64
	for j := range t.Count() {
		if t.Float64At(j) != Expected(op, t.DType, n, offset+j) {
			wrong++
		}
	}
	return wrong
}

// Pattern is a non-reduced element: rank r's element i, unique per (r, i) in
// every dtype for the counts the suite uses modulo the dtype's range.
func Pattern(dt collective.DType, r, i int) float64 {
	v := (r*131 + i*7) % 97
	return float64(v)
}

// FillPattern sets t[j] = Pattern(dt, r, offset+j).
func FillPattern(t collective.Tensor, r, offset int) {
	for j := range t.Count() {
		t.SetFloat64(j, Pattern(t.DType, r, offset+j))
	}
}

// CountPattern counts elements of t that differ from Pattern(dt, rank,
// offset+j) as t's type holds it (fp8 rounds most patterns).
func CountPattern(t collective.Tensor, rank, offset int) int64 {
	var wrong int64
	held := collective.NewTensor(t.DType, 1)
	for j := range t.Count() {
		held.SetFloat64(0, Pattern(t.DType, rank, offset+j))
		if t.Float64At(j) != held.Float64At(0) {
			wrong++
		}
	}
	return wrong
}
