package collective

import (
	"fmt"
	"strings"
)

// DType is the element type of a [Tensor].
type DType uint8

// The element types a tensor may hold.
const (
	Float32 DType = iota + 1
	Float64
	Float16
	BFloat16
	Int32
	Int64
	Uint8
	// The types nccl-tests adds (ncclInt8, ncclUint32, ncclUint64 and
	// NCCL 2.24's ncclFloat8e4m3 and ncclFloat8e5m2), declared after the
	// first seven so that their numbers, which results and the wire carry,
	// keep their meaning.
	Int8
	Uint32
	Uint64
	// Float8E4M3 is OCP FP8 E4M3 (torch's float8_e4m3fn: no infinities,
	// largest 448); Float8E5M2 is OCP FP8 E5M2 (IEEE-like, largest 57344).
	// Both reduce in float32 and round once, to nearest even, saturating
	// at the largest finite value as CUDA's __nv_fp8 conversions do.
	Float8E4M3
	Float8E5M2
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Float32:    {"float32", 4},
	Float64:    {"float64", 8},
	Float16:    {"float16", 2},
	BFloat16:   {"bfloat16", 2},
	Int32:      {"int32", 4},
	Int64:      {"int64", 8},
	Uint8:      {"uint8", 1},
	Int8:       {"int8", 1},
	Uint32:     {"uint32", 4},
	Uint64:     {"uint64", 8},
	Float8E4M3: {"f8e4m3", 1},
	Float8E5M2: {"f8e5m2", 1},
}

// DTypes lists every element type, in declaration order.
func DTypes() []DType {
	return []DType{Float32, Float64, Float16, BFloat16, Int32, Int64, Uint8, Int8, Uint32, Uint64, Float8E4M3, Float8E5M2}
}

// Unsigned reports whether d is an unsigned integer type.
func (d DType) Unsigned() bool { return d == Uint8 || d == Uint32 || d == Uint64 }

// Integer reports whether d is an integer type, whose arithmetic wraps.
func (d DType) Integer() bool {
	return d == Int8 || d == Uint8 || d == Int32 || d == Uint32 || d == Int64 || d == Uint64
}

// Valid reports whether d is one of the declared element types.
func (d DType) Valid() bool { return d >= Float32 && d <= Float8E5M2 }

// Size is the size of one element in bytes; 0 for an invalid type.
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// String returns the name ParseDType accepts.
func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

var dtypeAliases = map[string]DType{
	"float": Float32, "f32": Float32, "fp32": Float32,
	"double": Float64, "f64": Float64, "fp64": Float64,
	"half": Float16, "f16": Float16, "fp16": Float16,
	"bf16": BFloat16,
	"int":  Int32, "i32": Int32,
	"i64": Int64, "long": Int64,
	"u8": Uint8, "byte": Uint8, "char": Uint8,
	"i8": Int8, "u32": Uint32, "u64": Uint64,
	"float8_e4m3fn": Float8E4M3, "float8_e4m3": Float8E4M3, "fp8_e4m3": Float8E4M3, "e4m3": Float8E4M3,
	"float8_e5m2": Float8E5M2, "fp8_e5m2": Float8E5M2, "e5m2": Float8E5M2,
}

// ParseDType parses a type name such as "float32" or "bf16".
func ParseDType(s string) (DType, error) {
	ls := strings.ToLower(strings.TrimSpace(s))
	for _, d := range DTypes() {
		if d.String() == ls {
			return d, nil
		}
	}
	if d, ok := dtypeAliases[ls]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (accepted: %s)", s, strings.Join(dtypeNames(), ", "))
}

func dtypeNames() []string {
	var names []string
	for _, d := range DTypes() {
		names = append(names, d.String())
	}
	return names
}
