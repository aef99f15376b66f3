//go:build cgo

package nccl

import (
	"testing"

	"github.com/distbench/distbench/collective"
)

// TestEnums holds the mapping to NCCL's ncclDataType_t and ncclRedOp_t to
// nccl.h's numbers, for every type distbench has; mulsum never reaches
// NCCL (the engine rewrites it as a sum).
func TestEnums(t *testing.T) {
	types := map[collective.DType]int{
		collective.Int8: 0, collective.Uint8: 1, collective.Int32: 2, collective.Uint32: 3, collective.Int64: 4, collective.Uint64: 5,
		collective.Float16: 6, collective.Float32: 7, collective.Float64: 8, collective.BFloat16: 9,
		collective.Float8E4M3: 10, collective.Float8E5M2: 11,
	}
	if len(types) != len(collective.DTypes()) {
		t.Errorf("%d types mapped, distbench has %d", len(types), len(collective.DTypes()))
	}
	for _, dt := range collective.DTypes() {
		if got, want := ncclType(dt), types[dt]; got != want {
			t.Errorf("ncclType(%s) = %d, nccl.h says %d", dt, got, want)
		}
	}
	ops := map[collective.Op]int{collective.Sum: 0, collective.Prod: 1, collective.Max: 2, collective.Min: 3, collective.Avg: 4, collective.MulSum: -1}
	for _, op := range collective.Ops() {
		if got, want := ncclOp(op), ops[op]; got != want {
			t.Errorf("ncclOp(%s) = %d, want %d", op, got, want)
		}
	}
}
