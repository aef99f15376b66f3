package nn

import "fmt"

// Tensor is a dense float32 array in row-major order. Images are NCHW
// (batch, channels, height, width); matrices are [rows, cols].
//
// Layers own the tensors they return and overwrite them on the next call, so
// that a training step allocates nothing once shapes are known. Copy what
// must outlive the next Forward or Backward.
type Tensor struct {
	Shape []int
	Data  []float32
}

// NewTensor allocates a zeroed tensor of the given shape.
func NewTensor(shape ...int) *Tensor {
	return &Tensor{Shape: append([]int(nil), shape...), Data: make([]float32, numel(shape))}
}

// FromSlice wraps data (not copied) as a tensor of the given shape.
// It panics when the sizes disagree.
func FromSlice(data []float32, shape ...int) *Tensor {
	if numel(shape) != len(data) {
		panic(fmt.Sprintf("nn: FromSlice: %d values for shape %v", len(data), shape))
	}
	return &Tensor{Shape: append([]int(nil), shape...), Data: data}
}

// Numel is the number of elements.
func (t *Tensor) Numel() int { return numel(t.Shape) }

func (t *Tensor) String() string { return fmt.Sprintf("Tensor%v", t.Shape) }

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// ensure returns t reshaped to shape, reusing its memory when large enough.
// Its contents are unspecified; callers overwrite or clear them. Buffers are
// only ever grown, so a model stepping through a fixed batch size reaches a
// steady state with no allocation at all.
func ensure(t *Tensor, shape ...int) *Tensor {
	n := numel(shape)
	if t == nil {
		t = &Tensor{}
	}
	if cap(t.Data) < n {
		t.Data = make([]float32, n)
	}
	t.Data = t.Data[:n]
	if !sameShape(t.Shape, shape) {
		t.Shape = append(t.Shape[:0], shape...)
	}
	return t
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// grow returns s with length n, reusing its memory when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// dims4 checks that x is 4-D with c channels and returns its dimensions.
func dims4(layer string, x *Tensor, c int) (n, h, w int) {
	if len(x.Shape) != 4 || (c > 0 && x.Shape[1] != c) {
		panic(fmt.Sprintf("nn: %s: input shape %v, want [N %d H W]", layer, x.Shape, c))
	}
	return x.Shape[0], x.Shape[2], x.Shape[3]
}
