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
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Float32:  {"float32", 4},
	Float64:  {"float64", 8},
	Float16:  {"float16", 2},
	BFloat16: {"bfloat16", 2},
	Int32:    {"int32", 4},
	Int64:    {"int64", 8},
	Uint8:    {"uint8", 1},
}

// DTypes lists every element type, in declaration order.
func DTypes() []DType {
	return []DType{Float32, Float64, Float16, BFloat16, Int32, Int64, Uint8}
}

// Valid reports whether d is one of the declared element types.
func (d DType) Valid() bool { return d >= Float32 && d <= Uint8 }

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
