package collective

import (
	"fmt"
	"strings"
)

// Op is a reduction operator.
type Op uint8

// The reduction operators. Avg is Sum followed by a division by the group
// size; MulSum is a Sum of each rank's input multiplied by the rank's
// [PremulScalar] (NCCL's ncclRedOpCreatePreMulSum as nccl-tests' "mulsum"
// uses it). Strategies never see either: the common engine rewrites them
// as Sum.
const (
	Sum Op = iota + 1
	Prod
	Max
	Min
	Avg
	MulSum
)

var opNames = [...]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg", MulSum: "mulsum"}

// Ops lists every operator.
func Ops() []Op { return []Op{Sum, Prod, Max, Min, Avg, MulSum} }

// Valid reports whether o is a declared operator.
func (o Op) Valid() bool { return o >= Sum && o <= MulSum }

// PremulScalar is the factor by which [MulSum] multiplies rank's input
// before summing: 1 on even ranks, 2 on odd ones, nccl-tests'
// ncclVerifiablePremulScalar, so that a mulsum here means what
// `all_reduce_perf -o mulsum` measures and checks.
func PremulScalar(rank int) float64 {
	if rank%2 == 0 {
		return 1
	}
	return 2
}

func (o Op) String() string {
	if !o.Valid() {
		return fmt.Sprintf("op(%d)", uint8(o))
	}
	return opNames[o]
}

// ParseOp parses an operator name such as "sum".
func ParseOp(s string) (Op, error) {
	ls := strings.ToLower(strings.TrimSpace(s))
	for _, o := range Ops() {
		if o.String() == ls {
			return o, nil
		}
	}
	switch ls {
	case "mean":
		return Avg, nil
	case "premulsum", "premul_sum":
		return MulSum, nil
	}
	return 0, fmt.Errorf("unknown op %q (accepted: sum, prod, max, min, avg, mulsum)", s)
}
