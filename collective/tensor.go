package collective

import (
	"fmt"
	"unsafe"
)

// Tensor is a typed view of host memory: Data holds Count() elements of DType
// in the machine's byte order. Tensors share memory with the slices they were
// made from; collectives write results into them in place.
//
// A tensor in device memory has Mem set and Data nil (see [DeviceTensor]);
// the typed views below are of host memory only.
type Tensor struct {
	DType DType
	Data  []byte
	Mem   DeviceMemory
}

// NewTensor allocates a zeroed tensor of count elements. The memory is 8-byte
// aligned, so every typed view of it is valid.
func NewTensor(dt DType, count int) Tensor {
	words := make([]uint64, (count*dt.Size()+7)/8)
	return Tensor{DType: dt, Data: asBytes(words)[:count*dt.Size()]}
}

// Count is the number of elements.
func (t Tensor) Count() int {
	if s := t.DType.Size(); s > 0 {
		return t.Bytes() / s
	}
	return 0
}

// Bytes is the size in bytes.
func (t Tensor) Bytes() int {
	if t.Mem != nil {
		return t.Mem.Bytes()
	}
	return len(t.Data)
}

// Slice returns the elements [lo, hi) as a tensor sharing memory with t.
func (t Tensor) Slice(lo, hi int) Tensor {
	s := t.DType.Size()
	if t.Mem != nil {
		return Tensor{DType: t.DType, Mem: t.Mem.Slice(lo*s, hi*s)}
	}
	return Tensor{DType: t.DType, Data: t.Data[lo*s : hi*s : hi*s]}
}

// Clone returns a copy of t in fresh host memory; a device tensor's Clone
// panics (use ToHost, which can fail).
func (t Tensor) Clone() Tensor {
	if t.Mem != nil {
		panic("collective: Clone of a device tensor")
	}
	c := NewTensor(t.DType, t.Count())
	copy(c.Data, t.Data)
	return c
}

func (t Tensor) String() string {
	if t.Mem != nil {
		return fmt.Sprintf("Tensor(%s×%d on %s:%d)", t.DType, t.Count(), t.Mem.Device(), t.Mem.Ordinal())
	}
	return fmt.Sprintf("Tensor(%s×%d)", t.DType, t.Count())
}

func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func view[T any](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// FromFloat32 views s as a tensor without copying.
func FromFloat32(s []float32) Tensor { return Tensor{DType: Float32, Data: asBytes(s)} }

// FromFloat64 views s as a tensor without copying.
func FromFloat64(s []float64) Tensor { return Tensor{DType: Float64, Data: asBytes(s)} }

// FromInt32 views s as a tensor without copying.
func FromInt32(s []int32) Tensor { return Tensor{DType: Int32, Data: asBytes(s)} }

// FromInt64 views s as a tensor without copying.
func FromInt64(s []int64) Tensor { return Tensor{DType: Int64, Data: asBytes(s)} }

// FromUint8 views s as a tensor without copying.
func FromUint8(s []uint8) Tensor { return Tensor{DType: Uint8, Data: s} }

// FromFloat16 views raw binary16 values as a tensor without copying.
func FromFloat16(s []uint16) Tensor { return Tensor{DType: Float16, Data: asBytes(s)} }

// FromBFloat16 views raw bfloat16 values as a tensor without copying.
func FromBFloat16(s []uint16) Tensor { return Tensor{DType: BFloat16, Data: asBytes(s)} }

// Float32s views the tensor's memory as float32 values; it panics on another type.
func (t Tensor) Float32s() []float32 { t.must(Float32); return view[float32](t.Data) }

// Float64s views the tensor's memory as float64 values.
func (t Tensor) Float64s() []float64 { t.must(Float64); return view[float64](t.Data) }

// Int32s views the tensor's memory as int32 values.
func (t Tensor) Int32s() []int32 { t.must(Int32); return view[int32](t.Data) }

// Int64s views the tensor's memory as int64 values.
func (t Tensor) Int64s() []int64 { t.must(Int64); return view[int64](t.Data) }

// Uint16s views a float16 or bfloat16 tensor's raw values.
func (t Tensor) Uint16s() []uint16 {
	if t.DType != Float16 && t.DType != BFloat16 {
		panic(fmt.Sprintf("collective: Uint16s of a %s tensor", t.DType))
	}
	return view[uint16](t.Data)
}

func (t Tensor) must(dt DType) {
	if t.DType != dt {
		panic(fmt.Sprintf("collective: %s view of a %s tensor", dt, t.DType))
	}
}

// Float64At returns element i converted to float64, for checks and reports.
func (t Tensor) Float64At(i int) float64 {
	s := t.DType.Size()
	b := t.Data[i*s : i*s+s]
	switch t.DType {
	case Float32:
		return float64(view[float32](b)[0])
	case Float64:
		return view[float64](b)[0]
	case Float16:
		return float64(Float16ToFloat32(view[uint16](b)[0]))
	case BFloat16:
		return float64(BFloat16ToFloat32(view[uint16](b)[0]))
	case Int32:
		return float64(view[int32](b)[0])
	case Int64:
		return float64(view[int64](b)[0])
	case Uint8:
		return float64(b[0])
	case Int8:
		return float64(int8(b[0]))
	case Uint32:
		return float64(view[uint32](b)[0])
	case Uint64:
		return float64(view[uint64](b)[0])
	case Float8E4M3:
		return float64(Float8E4M3ToFloat32(b[0]))
	case Float8E5M2:
		return float64(Float8E5M2ToFloat32(b[0]))
	}
	panic("collective: invalid dtype")
}

// SetFloat64 stores v, converted to the tensor's type (integers truncate,
// half types round to nearest even), at element i.
func (t Tensor) SetFloat64(i int, v float64) {
	s := t.DType.Size()
	b := t.Data[i*s : i*s+s]
	switch t.DType {
	case Float32:
		view[float32](b)[0] = float32(v)
	case Float64:
		view[float64](b)[0] = v
	case Float16:
		view[uint16](b)[0] = Float32ToFloat16(float32(v))
	case BFloat16:
		view[uint16](b)[0] = Float32ToBFloat16(float32(v))
	case Int32:
		view[int32](b)[0] = int32(int64(v))
	case Int64:
		view[int64](b)[0] = int64(v)
	case Uint8:
		b[0] = uint8(int64(v))
	case Int8:
		b[0] = uint8(int8(int64(v)))
	case Uint32:
		view[uint32](b)[0] = uint32(int64(v))
	case Uint64:
		view[uint64](b)[0] = uint64(int64(v))
	case Float8E4M3:
		b[0] = Float32ToFloat8E4M3(float32(v))
	case Float8E5M2:
		b[0] = Float32ToFloat8E5M2(float32(v))
	default:
		panic("collective: invalid dtype")
	}
}
