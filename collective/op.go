package collective

import (
	"fmt"
	"strings"
)

// Op is a reduction operator.
type Op uint8

// The reduction operators. Avg is Sum followed by a division by the group
// size; strategies never see it (the common engine rewrites it).
const (
	Sum Op = iota + 1
	Prod
	Max
	Min
	Avg
)

var opNames = [...]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg"}

// Ops lists every operator.
func Ops() []Op { return []Op{Sum, Prod, Max, Min, Avg} }

// Valid reports whether o is a declared operator.
func (o Op) Valid() bool { return o >= Sum && o <= Avg }

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
	if ls == "mean" {
		return Avg, nil
	}
	return 0, fmt.Errorf("unknown op %q (accepted: sum, prod, max, min, avg)", s)
}
