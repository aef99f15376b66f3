package kernels

import (
	"bytes"
	"testing"

	"github.com/distbench/distbench/collective"
)

// Reduction is what a transport's reducing receive runs: it must compute
// what Reduce computes, name the dtype's element size, and cost no
// allocation, since the engine builds one per posted receive.
func TestReduction(t *testing.T) {
	for _, dt := range collective.DTypes() {
		for _, op := range collective.Ops() {
			red := Reduction(dt, op)
			if red.Elem != dt.Size() {
				t.Errorf("%s/%s: Elem = %d, want %d", dt, op, red.Elem, dt.Size())
			}
			a, b := collective.NewTensor(dt, 37), collective.NewTensor(dt, 37)
			for i := range 37 {
				a.SetFloat64(i, float64(i%7+1))
				b.SetFloat64(i, float64(i%5+2))
			}
			want := a.Clone()
			Reduce(dt, op, want.Data, b.Data)
			red.Into(a.Data, b.Data)
			if !bytes.Equal(a.Data, want.Data) {
				t.Errorf("%s/%s: Reduction(...).Into differs from Reduce", dt, op)
			}
			if n := testing.AllocsPerRun(10, func() { red = Reduction(dt, op) }); n != 0 {
				t.Errorf("%s/%s: %v allocations per Reduction", dt, op, n)
			}
		}
	}
}

func TestFuncInvalid(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Func of an invalid dtype did not panic")
		}
	}()
	Func(collective.DType(0), collective.Sum)
}
