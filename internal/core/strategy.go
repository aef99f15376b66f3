package core

import (
	"context"
	"fmt"
	"strings"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/units"
)

// Strategy is the collective.Strategy of a strategy that is nothing but its
// options and its algorithms. It describes itself ([collective.Describer]),
// checks options before any process starts ([collective.OptionValidator]) and
// builds a [Group]:
//
//	func init() {
//		collective.Register(Name, core.Strategy[options]{
//			Name: Name, Summary: "...", Options: parseOptions,
//			Algorithms: func(o options) core.Algorithms { return &algorithms{chunk: o.chunk} },
//		})
//	}
type Strategy[O any] struct {
	Name    string // the registered name, which errors carry
	Summary string // the one line `distbench strategies` shows
	// Options reads and checks the strategy's options; an unknown key is an
	// error that lists the accepted ones.
	Options func(opts map[string]string) (O, error)
	// Algorithms returns the algorithms of one group, given the options.
	Algorithms func(o O) Algorithms
}

var (
	_ collective.Strategy        = Strategy[struct{}]{}
	_ collective.Describer       = Strategy[struct{}]{}
	_ collective.OptionValidator = Strategy[struct{}]{}
)

// Description returns s.Summary.
func (s Strategy[O]) Description() string { return s.Summary }

// ValidateOptions reports whether s.Options accepts opts.
func (s Strategy[O]) ValidateOptions(opts map[string]string) error {
	_, err := s.Options(opts)
	return err
}

// New reads cfg.Options and builds a communicator on s.Algorithms.
func (s Strategy[O]) New(ctx context.Context, cfg collective.Config) (collective.Comm, error) {
	o, err := s.Options(cfg.Options)
	if err != nil {
		return nil, err
	}
	return New(s.Name, cfg, func(*Group) (Algorithms, error) { return s.Algorithms(o), nil })
}

// The range of the chunk option ParseChunk accepts.
const (
	MinChunk = 64
	MaxChunk = 1 << 30
)

// ParseChunk parses the value of a strategy's "chunk" option, a pipeline
// chunk size such as 256KiB (see units.ParseBytes), from MinChunk to MaxChunk
// bytes.
func ParseChunk(value string) (int, error) {
	n, err := units.ParseBytes(value)
	if err != nil {
		return 0, fmt.Errorf("option chunk: %w", err)
	}
	if n < MinChunk || n > MaxChunk {
		return 0, fmt.Errorf("option chunk=%s out of range (accepted: %s to %s)", value, units.FormatBytes(MinChunk), units.FormatBytes(MaxChunk))
	}
	return int(n), nil
}

// ParseChoice parses the value of a strategy option that names one of
// choices (an "algo" option, say) and returns its index; an unknown value is
// an error that lists the accepted ones.
func ParseChoice(key, value string, choices []string) (int, error) {
	for i, c := range choices {
		if value == c {
			return i, nil
		}
	}
	return 0, fmt.Errorf("option %s=%q unknown (accepted: %s)", key, value, strings.Join(choices, ", "))
}

// AlgoOptions are the options of a strategy whose allreduce runs one of
// several algorithms, hier among them (the ring's and the tree's): algo,
// inter (hier's algorithm across hosts) and chunk.
type AlgoOptions struct {
	Algo, Inter int // indices into the strategy's algorithm names
	Chunk       int // bytes; the caller's default when unset
}

// ParseAlgoOptions parses opts against algos, the strategy's algorithm
// names with auto first (index 0) and hier at index hier; inter takes only
// the names before hier. chunk is the default chunk (0: the strategy's
// automatic choice). Unknown keys, unknown names and inter without
// algo=hier are errors that say what is accepted.
func ParseAlgoOptions(opts map[string]string, algos []string, hier, chunk int) (AlgoOptions, error) {
	o := AlgoOptions{Chunk: chunk}
	for k, v := range opts {
		var err error
		switch k {
		case "algo":
			o.Algo, err = ParseChoice(k, v, algos)
		case "inter":
			o.Inter, err = ParseChoice(k, v, algos[:hier])
		case "chunk":
			o.Chunk, err = ParseChunk(v)
		default:
			err = fmt.Errorf("unknown option %q (accepted: algo, chunk, inter)", k)
		}
		if err != nil {
			return o, err
		}
	}
	if _, set := opts["inter"]; set && o.Algo != hier {
		return o, fmt.Errorf("option inter=%s applies only to algo=hier", opts["inter"])
	}
	return o, nil
}

// ChunkBytes rounds a chunk size down to whole elements of dt, and to at
// least one element, so that pipelined chunks never split an element.
func ChunkBytes(chunk int, dt collective.DType) int {
	s := dt.Size()
	return max(s, chunk/s*s)
}

// Mod is a modulo whose result is never negative, for ring and tree
// neighbour arithmetic (rank−1 of rank 0 is n−1).
func Mod(a, n int) int { return ((a % n) + n) % n }
