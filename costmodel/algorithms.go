package costmodel

import (
	"fmt"
	"sort"
	"strings"

	"github.com/distbench/distbench/internal/shapes"
)

// Algorithm is one thing distbench runs, as the model knows it: its
// closed form and, where the model can generate its schedule, its Program.
type Algorithm struct {
	// Name is "strategy" for the strategy's defaults (algo=auto) or
	// "strategy/algo".
	Name       string
	Strategy   string
	Options    map[string]string // the options a sweep record carries for it
	Collective string
	// Terms is the closed form at n ranks and S bytes; p picks the bound
	// that applies where the form is the longest of several.
	Terms func(p Params, n int, S int64) Terms
	// Program generates the schedule; nil where the model has only the
	// closed form (nccl: its schedules live in libnccl).
	Program func(n int, S int64) Program
	// Hier, for a hierarchical algorithm, generates its schedule on hosts
	// of the given sizes and HierClosed is its closed form at hosts ×
	// perHost: it depends on where the ranks sit, not only on n. Terms
	// and Program are then its flat form, a rank per host, as it runs
	// where there is no hierarchy.
	Hier       func(hosts []int, S int64) Program
	HierClosed func(intra, inter Params, hosts, perHost int, S int64) float64
}

// Closed is a's closed form at p, n ranks and S bytes, in seconds.
func (a Algorithm) Closed(p Params, n int, S int64) float64 { return a.closedTerms(p, n, S).At(p) }

func (a Algorithm) closedTerms(p Params, n int, S int64) Terms {
	q := p
	q.Beta += p.Kappa // which bound is longest, with the CPU's bytes
	t := withKappa(a.Terms(q, n, S))
	t.Steps = 0 // Step is an oversubscribed host's wake-up: a flat network has a core per rank
	return t
}

// es is the element size the generated schedules assume (float32).
const es = 4

// ringAuto and treeAuto are the strategies' algo=auto closed forms.
func ringAuto(p Params, n int, S int64) Terms {
	if ringAutoWhole(n, S) {
		return ringWholeTerms(n, S)
	}
	return ringRSAGTerms(p, n, S, 0)
}

func treeAuto(p Params, n int, S int64) Terms {
	if treeAutoRD(S) {
		return rdTerms(n, S)
	}
	return dbtreeTerms(p, n, S, 0)
}

// hierInter is ring's or tree's algo=hier with inter=across: across hosts
// the flat algorithm called strategy/inter (terms, program), at its
// defaults; within a host what core's hierarchy does for every inter.
func hierInter(strategy, across string, terms func(Params, int, int64) Terms, program func(int, int64) Program) Algorithm {
	opts := map[string]string{"algo": "hier", "inter": across}
	a := Algorithm{Name: strategy + "/hier/" + across, Strategy: strategy, Options: opts, Collective: "allreduce",
		Terms: terms, Program: program}
	if strategy == "ring" {
		a.Hier = func(hosts []int, S int64) Program { return ringHier(hosts, S, es, opts) }
		a.HierClosed = func(intra, inter Params, hosts, perHost int, S int64) float64 {
			return HierarchicalTerms(intra, inter, hosts, perHost, S, ringChunk(0, int(S)/2, shapes.RingDefaultChunk, es), terms)
		}
	} else {
		a.Hier = func(hosts []int, S int64) Program { return treeHier(hosts, S, es, opts) }
		a.HierClosed = func(intra, inter Params, hosts, perHost int, S int64) float64 {
			return HierarchicalTerms(intra, inter, hosts, perHost, S, shapes.TreeDefaultChunk, terms)
		}
	}
	return a
}

// algorithms lists what the model knows. The hierarchical allreduces
// (ring/hier, tree/hier: hier.go, checked in schedule_hier_test.go) run
// their inter algorithm at its defaults, strategy/hier/inter the one
// named; ps/local_agg is ps's (PSLocalAgg, schedule_ps_test.go).
var algorithms = []Algorithm{
	{Name: "ring/hier", Strategy: "ring", Options: map[string]string{"algo": "hier"}, Collective: "allreduce",
		Terms:   ringAuto,
		Program: func(n int, S int64) Program { return RingAllReduce(n, S, es, 0) },
		Hier:    func(hosts []int, S int64) Program { return ringHier(hosts, S, es, nil) },
		HierClosed: func(intra, inter Params, hosts, perHost int, S int64) float64 {
			return HierarchicalTerms(intra, inter, hosts, perHost, S, ringChunk(0, int(S)/2, shapes.RingDefaultChunk, es), ringAuto)
		}},
	{Name: "tree/hier", Strategy: "tree", Options: map[string]string{"algo": "hier"}, Collective: "allreduce",
		Terms:   treeAuto,
		Program: func(n int, S int64) Program { return TreeAllReduce(n, S, es, 0) },
		Hier:    func(hosts []int, S int64) Program { return treeHier(hosts, S, es, nil) },
		HierClosed: func(intra, inter Params, hosts, perHost int, S int64) float64 {
			return HierarchicalTerms(intra, inter, hosts, perHost, S, shapes.TreeDefaultChunk, treeAuto)
		}},
	hierInter("ring", "rsag", func(p Params, n int, S int64) Terms { return ringRSAGTerms(p, n, S, 0) },
		func(n int, S int64) Program { return RingRSAG(n, S, es, 0) }),
	hierInter("ring", "whole", func(_ Params, n int, S int64) Terms { return ringWholeTerms(n, S) }, RingWhole),
	hierInter("tree", "dbtree", func(p Params, n int, S int64) Terms { return dbtreeTerms(p, n, S, 0) },
		func(n int, S int64) Program { return DoubleTree(n, S, es, 0) }),
	hierInter("tree", "rd", func(_ Params, n int, S int64) Terms { return rdTerms(n, S) }, RecursiveDoubling),
	{Name: "ring", Strategy: "ring", Collective: "allreduce",
		Terms:   ringAuto,
		Program: func(n int, S int64) Program { return RingAllReduce(n, S, es, 0) }},
	{Name: "ring/rsag", Strategy: "ring", Options: map[string]string{"algo": "rsag"}, Collective: "allreduce",
		Terms:   func(p Params, n int, S int64) Terms { return ringRSAGTerms(p, n, S, 0) },
		Program: func(n int, S int64) Program { return RingRSAG(n, S, es, 0) }},
	{Name: "ring/whole", Strategy: "ring", Options: map[string]string{"algo": "whole"}, Collective: "allreduce",
		Terms:   func(_ Params, n int, S int64) Terms { return ringWholeTerms(n, S) },
		Program: func(n int, S int64) Program { return RingWhole(n, S) }},
	{Name: "ring/broadcast", Strategy: "ring", Collective: "broadcast",
		Terms:   func(_ Params, n int, S int64) Terms { return chainTerms(n, S, 0) },
		Program: func(n int, S int64) Program { return ChainBroadcast(n, S, es, 0, 0) }},
	{Name: "tree", Strategy: "tree", Collective: "allreduce",
		Terms:   treeAuto,
		Program: func(n int, S int64) Program { return TreeAllReduce(n, S, es, 0) }},
	{Name: "tree/dbtree", Strategy: "tree", Options: map[string]string{"algo": "dbtree"}, Collective: "allreduce",
		Terms:   func(p Params, n int, S int64) Terms { return dbtreeTerms(p, n, S, 0) },
		Program: func(n int, S int64) Program { return DoubleTree(n, S, es, 0) }},
	{Name: "tree/rd", Strategy: "tree", Options: map[string]string{"algo": "rd"}, Collective: "allreduce",
		Terms:   func(_ Params, n int, S int64) Terms { return rdTerms(n, S) },
		Program: func(n int, S int64) Program { return RecursiveDoubling(n, S) }},
	{Name: "tree/broadcast", Strategy: "tree", Collective: "broadcast",
		Terms:   func(p Params, n int, S int64) Terms { return binomialTerms(p, n, S) },
		Program: func(n int, S int64) Program { return BinomialBroadcast(n, S, es, 0, 0) }},
	{Name: "ps", Strategy: "ps", Collective: "allreduce",
		Terms:   func(_ Params, n int, S int64) Terms { return psTerms(n, S, 0, false) },
		Program: func(n int, S int64) Program { return PSAllReduce(n, S, es, 0, false) }},
	{Name: "ps/local_agg", Strategy: "ps", Options: map[string]string{"local_agg": "1"}, Collective: "allreduce",
		Terms:   func(_ Params, n int, S int64) Terms { return psTerms(n, S, 0, false) },
		Program: func(n int, S int64) Program { return PSAllReduce(n, S, es, 0, false) },
		Hier:    func(hosts []int, S int64) Program { return PSLocalAgg(hosts, S, es, PSOptions{}) },
		HierClosed: func(intra, inter Params, hosts, perHost int, S int64) float64 {
			return psLocalAggClosed(intra, inter, hosts, perHost, 0, S)
		}},
	{Name: "ps/dedicated", Strategy: "ps", Options: map[string]string{"placement": "dedicated"}, Collective: "allreduce",
		Terms:   func(_ Params, n int, S int64) Terms { return psTerms(n, S, 0, true) },
		Program: func(n int, S int64) Program { return PSAllReduce(n, S, es, 0, true) }},
	{Name: "nccl/ring", Strategy: "nccl", Options: map[string]string{"algo": "ring"}, Collective: "allreduce",
		Terms: func(_ Params, n int, S int64) Terms { return ncclRingTerms(n, S) }},
	{Name: "nccl/tree", Strategy: "nccl", Options: map[string]string{"algo": "tree"}, Collective: "allreduce",
		Terms: func(_ Params, n int, S int64) Terms { return ncclTreeTerms(n, S) }},
}

// Algorithms returns every algorithm the model knows, by name.
func Algorithms() []Algorithm {
	out := append([]Algorithm(nil), algorithms...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the algorithms' names, sorted.
func Names() []string {
	var names []string
	for _, a := range Algorithms() {
		names = append(names, a.Name)
	}
	return names
}

// Lookup returns the algorithm called name; an unknown name says which
// names exist.
func Lookup(name string) (Algorithm, error) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("model: unknown algorithm %q (accepted: %s)", name, strings.Join(Names(), ", "))
}

// ForRecord returns the algorithm a sweep's record of strategy with opts
// measured: "strategy/algo" when an algo option is set (algo=hier with an
// inter option: "strategy/hier/inter"), the strategy's defaults otherwise;
// false when the model does not know it, or the options change what it
// would model (ps over gRPC, a chunk size, …). The tree's defaults run one
// of two algorithms by size: Ran says which.
func ForRecord(strategy string, opts map[string]string) (Algorithm, bool) {
	name := strategy
	for k, v := range opts {
		switch {
		case k == "algo" && (strategy == "ring" || strategy == "tree" || strategy == "nccl"):
		case k == "inter" && (strategy == "ring" || strategy == "tree") && opts["algo"] == "hier":
		case k == "placement" && strategy == "ps":
			if v == "dedicated" {
				name = strategy + "/dedicated"
			}
		case k == "transport" && strategy == "ps" && v == "mesh":
		case k == "local_agg" && strategy == "ps" && (v == "0" || v == "1"):
		default:
			return Algorithm{}, false
		}
	}
	if opts["local_agg"] == "1" {
		name += "/local_agg" // ps/dedicated/local_agg: no generator yet, unknown
	}
	if v := opts["algo"]; v != "" && v != "auto" {
		name += "/" + v
		if i := opts["inter"]; v == "hier" && i != "" && i != "auto" {
			name += "/" + i
		}
	}
	a, err := Lookup(name)
	return a, err == nil
}

// Ran returns the algorithm that ran where a was measured at n ranks and
// S bytes: a itself, except for the tree's defaults (algo=auto), which run
// recursive doubling or the double tree by size, decided by the strategy's
// own rule (treeAutoRD). Calibration fits the two apart, as records of
// algo=rd and algo=dbtree: one set of α, κ, γ and δ for both let the
// double tree's large sizes pull down what recursive doubling's small ones
// need. The ring's defaults switch too (ringAutoWhole) but stay one
// series: split, the validation sweep's held-out error did not move
// (docs/design/costmodel.md).
func (a Algorithm) Ran(n int, S int64) Algorithm {
	if a.Name != "tree" {
		return a
	}
	name := "tree/dbtree"
	if treeAutoRD(S) {
		name = "tree/rd"
	}
	r, err := Lookup(name)
	if err != nil {
		return a
	}
	return r
}
