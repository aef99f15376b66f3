package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/units"
	"go.yaml.in/yaml/v3"
)

// Sizes is a list of sizes ([4KiB, 1MiB]) or a range ({min: 4KiB, max:
// 16MiB, factor: 4} or with step: 1MiB), as run's -b/-e/-f/-i.
type Sizes struct {
	List  []string
	Range *SizeRange
}

// SizeRange is nccl-tests' -b/-e/-f/-i.
type SizeRange struct {
	Min    string  `yaml:"min"`
	Max    string  `yaml:"max"`
	Factor float64 `yaml:"factor,omitempty"`
	Step   string  `yaml:"step,omitempty"`
}

// UnmarshalYAML reads a sequence as a list and a mapping as a range.
func (s *Sizes) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		s.Range = nil
		return n.Decode(&s.List)
	case yaml.MappingNode:
		s.List = nil
		s.Range = &SizeRange{}
		return n.Decode(s.Range)
	case yaml.ScalarNode:
		s.Range, s.List = nil, []string{n.Value}
		return nil
	}
	return fmt.Errorf("line %d: sizes: want a list such as [4KiB, 1MiB] or a range such as {min: 4KiB, max: 16MiB, factor: 4}", n.Line)
}

// MarshalYAML writes what UnmarshalYAML reads.
func (s Sizes) MarshalYAML() (any, error) {
	if s.Range != nil {
		return s.Range, nil
	}
	return s.List, nil
}

// IsZero lets omitempty leave an empty Sizes out.
func (s Sizes) IsZero() bool { return s.Range == nil && len(s.List) == 0 }

// expand returns the sizes in bytes, each a multiple of every dtype's size.
func (s Sizes) expand(dtypes []collective.DType) ([]int64, error) {
	var out []int64
	if s.Range == nil {
		if len(s.List) == 0 {
			return nil, errors.New("sizes: missing (a list such as [4KiB, 1MiB] or a range such as {min: 4KiB, max: 16MiB, factor: 4})")
		}
		for _, t := range s.List {
			v, err := units.ParseBytes(t)
			if err != nil {
				return nil, fmt.Errorf("sizes: %w", err)
			}
			out = append(out, v)
		}
	} else {
		r := s.Range
		lo, err := units.ParseBytes(r.Min)
		if err != nil {
			return nil, fmt.Errorf("sizes.min: %w", err)
		}
		hi, err := units.ParseBytes(r.Max)
		if err != nil {
			return nil, fmt.Errorf("sizes.max: %w", err)
		}
		if lo > hi {
			return nil, fmt.Errorf("sizes: min %s is larger than max %s", r.Min, r.Max)
		}
		align := int64(1) // every dtype's size divides the largest
		for _, dt := range dtypes {
			align = max(align, int64(dt.Size()))
		}
		var step int64
		switch {
		case r.Step != "" && r.Factor != 0:
			return nil, errors.New("sizes: give factor or step, not both")
		case r.Step != "":
			if step, err = units.ParseBytes(r.Step); err != nil || step <= 0 {
				return nil, fmt.Errorf("sizes.step %q: want a positive size such as 1MiB", r.Step)
			}
			if step%align != 0 {
				return nil, fmt.Errorf("sizes.step %s: not a whole number of elements (accepted: multiples of %d bytes)", r.Step, align)
			}
		case r.Factor == 0 && lo != hi:
			return nil, errors.New("sizes: a range needs factor (such as 2) or step (such as 1MiB)")
		case r.Factor != 0 && (r.Factor <= 1 || math.IsNaN(r.Factor) || math.IsInf(r.Factor, 0)):
			return nil, fmt.Errorf("sizes.factor %g: must be greater than 1", r.Factor)
		}
		if out, err = SizeSteps(lo, hi, r.Factor, step, align); err != nil {
			return nil, fmt.Errorf("sizes: %w", err)
		}
	}
	for _, v := range out {
		for _, dt := range dtypes {
			if v%int64(dt.Size()) != 0 {
				return nil, fmt.Errorf("sizes: %d bytes is not a multiple of %s's %d bytes", v, dt, dt.Size())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// MaxSizes is the most sizes a range may expand to.
const MaxSizes = 4096

// SizeSteps expands a range of sizes as nccl-tests' -b/-e/-f/-i do: from lo
// up to hi, each size the last one plus step or, with step 0, times factor.
// Sizes stay whole elements of align bytes (the largest dtype's size): a
// product is rounded down to one, as nccl-tests rounds to a count, and one
// that does not advance (-f 1.1 from 4 bytes) advances by an element, where
// nccl-tests would repeat the size forever and distbench used to stop. So a
// range never measures fewer sizes than its bounds and step say; more than
// MaxSizes is an error. The caller checks lo and step are multiples of
// align and factor is finite and above 1, naming them as its user does.
func SizeSteps(lo, hi int64, factor float64, step, align int64) ([]int64, error) {
	var out []int64
	for s := lo; s <= hi; {
		out = append(out, s)
		if len(out) > MaxSizes {
			return nil, fmt.Errorf("more than %d sizes from %d to %d bytes (accepted: a larger step or factor)", MaxSizes, lo, hi)
		}
		if step > 0 {
			s += step
			continue
		}
		next := float64(s) * factor
		if next > float64(hi) {
			break // also keeps the conversion below in range
		}
		s = max(int64(next)/align*align, s+align)
	}
	return out, nil
}
