package kernels

import (
	"unsafe"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// funcs holds one reduction function per valid dtype and op, built once, so
// that [Func] and [Reduction] hand out the same func values on every call
// and a posted receive costs no closure allocation.
var funcs = func() (t [collective.Float8E5M2 + 1][collective.MulSum + 1]func(dst, src []byte)) {
	for _, dt := range collective.DTypes() {
		for _, op := range collective.Ops() {
			t[dt][op] = func(dst, src []byte) { Reduce(dt, op, dst, src) }
		}
	}
	return t
}()

// Func returns the function that reduces src into dst with op, as [Reduce]
// does for dt. It panics on an invalid dtype or op.
func Func(dt collective.DType, op collective.Op) func(dst, src []byte) {
	if !dt.Valid() || !op.Valid() {
		panic("kernels: Func of invalid dtype " + dt.String() + " or op " + op.String())
	}
	return funcs[dt][op]
}

// Reduction describes the reduction by op over dt's elements to a
// transport's reducing receive (driver.ReducePoster).
func Reduction(dt collective.DType, op collective.Op) driver.Reduction {
	return driver.Reduction{Elem: dt.Size(), Into: Func(dt, op)}
}

// view reinterprets b as a slice of T; len(b) must be a multiple of T's size.
func view[T any](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}
