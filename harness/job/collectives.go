package job

import (
	"slices"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/results"
)

// Traits are what planning, validation and the memory check need to know
// of a collective; how it is run and checked is the harness's.
type Traits struct {
	Reduces bool // takes an op
	Rooted  bool // takes a root
	Blocks  bool // the count splits into np equal blocks
	// PointToPoint: OSU's benchmarks between ranks 0 and 1 (see
	// harness/p2p.go); the other ranks of the world idle. A Point's
	// Window, Iters and Warmup are theirs.
	PointToPoint bool
}

// collectives are the collectives a Point may name. Sizes name the larger
// buffer (allgather's output, reduce-scatter's input), as nccl-tests does;
// for collectives that split it into np blocks the count is rounded down to
// a multiple of np.
var collectives = map[string]Traits{
	"allreduce":     {Reduces: true},
	"reduce":        {Reduces: true, Rooted: true},
	"broadcast":     {Rooted: true},
	"allgather":     {Blocks: true},
	"reducescatter": {Reduces: true, Blocks: true},
	"gather":        {Rooted: true, Blocks: true},
	"scatter":       {Rooted: true, Blocks: true},
	"alltoall":      {Blocks: true},
	"sendrecv":      {},
	"barrier":       {},
	"p2p-latency":   {PointToPoint: true},
	"p2p-bw":        {PointToPoint: true},
	"p2p-bibw":      {PointToPoint: true},
}

// DefaultWindow is OSU's window of non-blocking operations in flight for
// p2p-bw and p2p-bibw (WINDOW_SIZE_LARGE), used where a Point gives none.
const DefaultWindow = 64

// MaxWindow is the largest window a Point may give.
const MaxWindow = 1 << 16

// TraitsOf returns the traits of a collective; ok is false for a name that
// is not one.
func TraitsOf(name string) (t Traits, ok bool) {
	t, ok = collectives[name]
	return t, ok
}

// Collectives lists the collectives a point may name, sorted.
func Collectives() []string {
	names := make([]string, 0, len(collectives))
	for n := range collectives {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// MinBudgetIters is the fewest timed iterations a Spec.TimeBudget leaves a
// point: a median of fewer is no statistic.
const MinBudgetIters = 3

// Count is the number of elements of dt in p's larger buffer at world size
// np: its bytes, rounded down to whole blocks for the collectives that split
// it, and none for a barrier.
func (p Point) Count(dt collective.DType, np int) int {
	count := int(p.Bytes) / dt.Size()
	if collectives[p.Collective].Blocks {
		count -= count % np
	}
	if p.Collective == "barrier" {
		count = 0
	}
	return count
}

// Record is the record of p with everything but the measurements.
func (s *Spec) Record(p Point) *results.Record {
	dt, _ := collective.ParseDType(p.DType)
	t := collectives[p.Collective]
	count := p.Count(dt, s.NP)
	r := &results.Record{
		Kind: results.KindCollective, Point: s.PointID(p),
		Collective: p.Collective, Strategy: s.Strategy, NP: s.NP,
		Bytes: int64(count * dt.Size()), Count: int64(count), DType: dt.String(),
		Root: -1, InPlace: p.InPlace, Link: s.Link, Transport: s.TransportName(), Hosts: s.Hosts, Options: s.Options,
		Iters: s.Iters, Warmup: s.Warmup, Wrong: -1,
	}
	if s.OnDevice() {
		r.Device = s.Device
	}
	r.Iters, r.Warmup = s.ItersOf(p)
	if t.Reduces {
		r.Op = p.Op
	}
	if t.Rooted {
		r.Root = p.Root
	}
	return r
}
