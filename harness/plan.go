package harness

import (
	"bytes"
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/internal/units"
	"github.com/distbench/distbench/peers"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/models"
	"github.com/distbench/distbench/workloads/train"
)

// DefaultPlanYAML is the plan `distbench sweep` runs when given none: every
// strategy that can run here, at np 2 and 4, allreduce from 4 KiB to 16 MiB
// and allgather at a few sizes, sized to finish in a few minutes on a 2-core
// machine.
//
//go:embed plans/default.yaml
var DefaultPlanYAML []byte

// AllStrategies in a plan's strategy list stands for every registered
// strategy that can run on this machine (collective.Availability).
const AllStrategies = "all"

// Plan defaults, where a plan leaves a setting out. Sweeps measure in place
// by default: it is what torch.distributed and the peers (MPI_IN_PLACE,
// gloo) do, so their lines share a plot, and it halves the sweep.
const (
	DefaultPlanIters   = 20
	DefaultPlanWarmup  = 5
	DefaultPlanTimeout = 2 * time.Minute
	DefaultPlanInPlace = "in"
)

// Plan is a sweep as written in a plan file (YAML) or built from flags:
// blocks whose cross products are the points to measure. [Plan.Expand]
// validates it and turns it into launches. A plan file looks like this
// (plans/default.yaml is a complete one):
//
//	iters: 20            # timed iterations a point; blocks may override
//	warmup: 5
//	check: true          # exact inputs, #wrong counted
//	time_budget: 2s      # per point, at least 3 iterations
//	rounds: 3            # measure every point in 3 rounds, interleaved across the sweep
//	timeout: 2m          # per operation
//	skip_unavailable: false
//	peers: [mpi, gloo]   # replay the float32 sum allreduce sizes through MPI and gloo
//	collectives:
//	  - strategies: [ring, tree]       # or [all]: every strategy that can run here
//	    np: [2, 4, 8]
//	    collectives: [allreduce, allgather]
//	    sizes: {min: 4KiB, max: 64MiB, factor: 2}   # or step: 1MiB, or a list [4KiB, 1MiB]
//	    dtypes: [float32, bfloat16]
//	    ops: [sum]
//	    inplace: in                    # in, out or both
//	    links: ["", 10g, "1Gbit,100us"] # "" is unshaped
//	    options: {chunk: 256KiB}       # strategy options
//	gradients:                         # one training step's DDP buckets as allreduce sizes
//	  - model: resnet50
//	    input: imagenet
//	    bucket_cap_mb: 25
//	    strategies: [all]
//	    np: [4]
//	training:
//	  - model: lenet
//	    dataset: mnist
//	    mode: ddp
//	    strategies: [ring]
//	    np: [2]
//	    steps: 200
//	    batch: 64
//	    lr: 0.1
//	    lr_schedule: step:1:0.5     # as train's --lr-schedule; lr_warmup: N epochs
type Plan struct {
	Name string `yaml:"name,omitempty"`
	// Settings every block inherits; a block may override iters and warmup.
	Iters      int           `yaml:"iters,omitempty" zero:"the default, 20"`
	Warmup     *int          `yaml:"warmup,omitempty"`
	Check      *bool         `yaml:"check,omitempty"`                          // default true
	Timeout    time.Duration `yaml:"timeout,omitempty" zero:"the default, 2m"` // per operation
	TimeBudget time.Duration `yaml:"time_budget,omitempty"`                    // per point, see Spec.TimeBudget
	// Rounds measures every collective point in that many rounds (1 to
	// MaxRounds; default 1), interleaved across the whole sweep: round 1 of
	// every launch, then round 2 of every launch, and so on, each round a
	// fresh launch of the world. All of a round's iterations of a point run
	// back to back within a second or so, so a burst of load from other
	// work on the machine slows all of them at once; spread over rounds
	// minutes apart, it slows one round of the point, which compare can
	// then tell from a change that holds in every round. Iters and
	// TimeBudget stay per point in total and are split across the rounds
	// (round k gets iters/rounds, the first iters%rounds rounds one more,
	// but at least MinBudgetIters, or iters if fewer; and time_budget/rounds
	// each). Warmup and the check run are per round, since each round is a
	// new launch. Training runs and peers are not repeated: they run once,
	// in round 1. Every round is recorded on its own (Record.Round);
	// reports and compare merge them (results.MergeRounds).
	Rounds RoundCount `yaml:"rounds,omitempty"`
	// SkipUnavailable leaves out, with a note, what cannot run on this
	// machine (a strategy whose Availability says no, a peer that is not
	// installed, a dataset that is not here). Without it such points are
	// recorded as failed with the reason, so that a sweep never quietly
	// measures less than it was asked to.
	SkipUnavailable bool `yaml:"skip_unavailable,omitempty"`

	Collectives []CollectiveBlock `yaml:"collectives,omitempty"`
	Gradients   []GradientBlock   `yaml:"gradients,omitempty"`
	Training    []TrainingBlock   `yaml:"training,omitempty"`
	// Peers replays the plan's float32 sum allreduce sizes, unshaped, at its
	// world sizes, through reference implementations (peers).
	Peers []string `yaml:"peers,omitempty"`
}

// MaxRounds is the most rounds a plan may ask for.
const MaxRounds = 100

// RoundCount is a plan's number of rounds. In YAML it must be an integer
// from 1 to MaxRounds; leaving it out means 1.
type RoundCount int

// UnmarshalYAML refuses anything but an integer from 1 to MaxRounds, with
// the line, rather than a decoder's type error that names no field.
func (c *RoundCount) UnmarshalYAML(n *yaml.Node) error {
	var v int
	// The tag first: the decoder would make 2.5 a 2.
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil || v < 1 || v > MaxRounds {
		what := strconv.Quote(n.Value)
		if n.Kind != yaml.ScalarNode {
			what = "(not a number)"
		}
		return fmt.Errorf("line %d: plan: rounds %s: want an integer from 1 to %d", n.Line, what, MaxRounds)
	}
	*c = RoundCount(v)
	return nil
}

// CollectiveBlock is strategies × np × links × collectives × dtypes × ops ×
// sizes × in-place forms.
type CollectiveBlock struct {
	Strategies  []string          `yaml:"strategies"`
	NP          []int             `yaml:"np"`
	Collectives []string          `yaml:"collectives"`
	Sizes       Sizes             `yaml:"sizes"`
	DTypes      []string          `yaml:"dtypes,omitempty"`  // default float32
	Ops         []string          `yaml:"ops,omitempty"`     // default sum
	InPlace     string            `yaml:"inplace,omitempty"` // in, out or both; default in
	Links       []string          `yaml:"links,omitempty"`   // "" is unshaped; default [""]
	Options     map[string]string `yaml:"options,omitempty"` // strategy options
	Root        int               `yaml:"root,omitempty"`
	Iters       int               `yaml:"iters,omitempty" zero:"the plan's iters"`
	Warmup      *int              `yaml:"warmup,omitempty"`

	about string // what the points replay, for progress lines
}

// GradientBlock replays one training step's gradient communication of a
// model: its DDP bucket sizes (models.GradProfile.BucketBytes) as float32
// sum allreduce points, in place, as DDP issues them.
type GradientBlock struct {
	Model       string            `yaml:"model"`
	Input       string            `yaml:"input,omitempty"` // mnist, cifar10, imagenet or CxHxW; default by model
	Classes     int               `yaml:"classes,omitempty" zero:"the default, 10 (1000 for imagenet)"`
	BucketCapMB float64           `yaml:"bucket_cap_mb,omitempty"`
	Strategies  []string          `yaml:"strategies"`
	NP          []int             `yaml:"np"`
	Links       []string          `yaml:"links,omitempty"`
	Options     map[string]string `yaml:"options,omitempty"`
}

// TrainingBlock is model × strategies × np training runs of the training
// workload (workloads/train), each its own launch. Settings left out take
// `distbench train`'s defaults.
type TrainingBlock struct {
	Model       string            `yaml:"model"`
	Dataset     string            `yaml:"dataset"`
	DataDir     string            `yaml:"data_dir,omitempty"` // default data/<dataset>
	Mode        string            `yaml:"mode,omitempty"`     // default ddp
	Strategies  []string          `yaml:"strategies"`
	NP          []int             `yaml:"np"`
	Links       []string          `yaml:"links,omitempty"`
	Options     map[string]string `yaml:"options,omitempty"`
	Epochs      int               `yaml:"epochs,omitempty" zero:"the default, 1"`
	Steps       int               `yaml:"steps,omitempty"`                         // per epoch; 0 is the whole epoch
	Batch       int               `yaml:"batch,omitempty" zero:"the default, 128"` // global
	LR          float64           `yaml:"lr,omitempty" zero:"the default, 0.01"`
	LRSchedule  string            `yaml:"lr_schedule,omitempty"` // as --lr-schedule; default constant
	LRWarmup    int               `yaml:"lr_warmup,omitempty"`   // epochs, as --lr-warmup
	Momentum    *float64          `yaml:"momentum,omitempty"`
	BucketCapMB float64           `yaml:"bucket_cap_mb,omitempty"`
	Seed        uint64            `yaml:"seed,omitempty" zero:"the default, 1"`
}

// Training defaults, those of `distbench train`.
const (
	DefaultTrainBatch    = 128
	DefaultTrainLR       = 0.01
	DefaultTrainMomentum = 0.5
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

// ParsePlan reads a plan from YAML. Unknown keys are errors (with their
// line and the keys accepted there): a misspelt key silently ignored would
// measure something else than intended.
func ParsePlan(src []byte) (*Plan, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, oneLine(err)
	}
	if len(root.Content) == 0 {
		return nil, errors.New("the plan is empty")
	}
	if err := checkKeys(root.Content[0], reflect.TypeFor[Plan](), "plan"); err != nil {
		return nil, err
	}
	var p Plan
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && err != io.EOF {
		return nil, oneLine(err)
	}
	// A plan is one document: what follows a "---" would be silently
	// left unmeasured. An empty trailing document is harmless.
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, oneLine(err)
		}
		if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null" {
			continue
		}
		return nil, fmt.Errorf("line %d: plan: a second YAML document (accepted: one document; merge its blocks into the first, or remove the \"---\")", doc.Line)
	}
	return &p, nil
}

// oneLine folds yaml.v3's multi-line errors into one line.
func oneLine(err error) error {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	return errors.New(strings.Join(strings.Fields(s), " "))
}

// checkKeys walks n against t's yaml keys and reports the first key that
// t does not have, with its line and the keys accepted there.
func checkKeys(n *yaml.Node, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[Sizes]():
		if n.Kind == yaml.MappingNode {
			return checkKeys(n, reflect.TypeFor[SizeRange](), where)
		}
		return nil
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode:
		return nil
	}
	fields := map[string]reflect.StructField{}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f
		names = append(names, name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		f, ok := fields[k.Value]
		if !ok {
			return fmt.Errorf("line %d: %s: unknown key %q (accepted: %s)", k.Line, where, k.Value, strings.Join(names, ", "))
		}
		if dflt, ok := f.Tag.Lookup("zero"); ok && notPositive(n.Content[i+1], f.Type) {
			return fmt.Errorf("line %d: %s: %s %s: must be positive (accepted: a positive value, or leave %s out for %s)",
				k.Line, where, k.Value, n.Content[i+1].Value, k.Value, dflt)
		}
		if err := checkKeys(n.Content[i+1], f.Type, where+"."+k.Value); err != nil {
			return err
		}
	}
	return nil
}

// notPositive reports whether v decodes as a number of type t (an integer,
// a float or a duration) that is zero or less. Fields tagged `zero:"..."`
// read zero as "use the default", so an explicit zero (timeout: 0s, which
// the CLI refuses) would otherwise silently become the default.
func notPositive(v *yaml.Node, t reflect.Type) bool {
	if v.Kind != yaml.ScalarNode {
		return false
	}
	x := reflect.New(t)
	if v.Decode(x.Interface()) != nil {
		return false // the decoder reports what is wrong with it
	}
	switch x = x.Elem(); x.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() <= 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return x.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return !(x.Float() > 0)
	}
	return false
}

// Marshal writes the plan as YAML, the form a resumed sweep reads back.
func (p *Plan) Marshal() ([]byte, error) {
	return yaml.Marshal(p)
}

// PlannedPoint is one point of an expanded plan.
type PlannedPoint struct {
	ID   string // Record.Point
	Desc string // for progress lines: "allreduce ring np=4 16MiB float32"
	// Record is the point's record with everything but measurements, for
	// recording a point that failed or was skipped.
	Record results.Record
	// Round of Rounds is the round being measured, during a sweep in
	// rounds; both are 0 in an expanded plan.
	Round, Rounds int
}

// Label is Desc, and the round when the point is measured in several:
// "allreduce ring np=4 16MiB float32 (round 2/3)".
func (p *PlannedPoint) Label() string {
	if p.Rounds > 1 {
		return fmt.Sprintf("%s (round %d/%d)", p.Desc, p.Round, p.Rounds)
	}
	return p.Desc
}

// PeerJob is one launch of a peer: every size at one world size.
type PeerJob struct {
	Peer  string
	Job   peers.Job
	Avail error // nil when the peer is installed here
}

// Group is one launch of an expanded plan: a strategy's world measuring
// all its points (process start-up paid once), a training run (Spec.Train
// set, one point), or a peer's run (Peer set).
type Group struct {
	Spec *Spec
	Peer *PeerJob
	// Skip, when set, is why this group cannot run here ("strategy nccl
	// cannot run here: ..."); its points are recorded as failed with it.
	Skip   string
	Points []PlannedPoint
	// Rounds is how many rounds the group is launched in: the plan's for
	// a strategy's collective points, 1 for a training run, a peer and a
	// group that cannot run here (Plan.Rounds).
	Rounds int
}

// RoundSpec is the launch of round k (1-based) of a collective group: its
// spec with each point's iterations and time budget split across the
// group's rounds (Plan.Rounds).
func (g *Group) RoundSpec(k int) *Spec {
	s := *g.Spec
	if g.Rounds > 1 && s.Train == nil {
		s.Iters = roundIters(s.Iters, g.Rounds, k)
		s.TimeBudget /= time.Duration(g.Rounds)
		if g.Spec.TimeBudget > 0 && s.TimeBudget == 0 {
			s.TimeBudget = 1 // a budget split to nothing is still a budget
		}
	}
	return &s
}

// roundIters is round k's share (1-based) of total iterations over rounds:
// total/rounds, one more for the first total%rounds rounds, and never fewer
// than MinBudgetIters (or total, if fewer), a median of fewer being no
// statistic.
func roundIters(total, rounds, k int) int {
	n := total / rounds
	if k <= total%rounds {
		n++
	}
	return max(n, min(total, MinBudgetIters))
}

// Name describes the group in one line.
func (g *Group) Name() string {
	switch {
	case g.Spec != nil && g.Spec.Train != nil:
		return g.Points[0].Desc
	case g.Spec != nil:
		s := fmt.Sprintf("%s np=%d", g.Spec.Strategy, g.Spec.NP)
		if g.Spec.Link != "" {
			s += " link=" + g.Spec.Link
		}
		for _, k := range slices.Sorted(maps.Keys(g.Spec.Options)) {
			s += " " + k + "=" + g.Spec.Options[k]
		}
		return s
	case g.Peer != nil:
		return fmt.Sprintf("%s (peer) np=%d", g.Peer.Peer, g.Peer.Job.NP)
	}
	return "?"
}

// Expanded is a validated plan, ready to run.
type Expanded struct {
	Plan   *Plan
	Groups []*Group
	// Notes say what SkipUnavailable left out.
	Notes []string
}

// IDs lists every planned point id, in order.
func (e *Expanded) IDs() []string {
	var ids []string
	for _, g := range e.Groups {
		for _, p := range g.Points {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// NumPoints counts the planned points.
func (e *Expanded) NumPoints() int {
	n := 0
	for _, g := range e.Groups {
		n += len(g.Points)
	}
	return n
}

// NumMeasurements counts the planned measurements: a point measured in
// three rounds counts three times.
func (e *Expanded) NumMeasurements() int {
	n := 0
	for _, g := range e.Groups {
		n += len(g.Points) * max(g.Rounds, 1)
	}
	return n
}

// NumLaunches counts the launches the sweep makes: one per group and round.
func (e *Expanded) NumLaunches() int {
	n := 0
	for _, g := range e.Groups {
		n += max(g.Rounds, 1)
	}
	return n
}

// Rounds is the plan's number of rounds.
func (e *Expanded) Rounds() int { return max(int(e.Plan.Rounds), 1) }

// Expand validates the whole plan, before anything starts, and expands it
// into launches. A (strategy, np, link, options, iters, warmup) combination
// is one launch however many blocks name it, so processes start once per
// world. An error names the block and the bad value, in one line.
func (p *Plan) Expand() (*Expanded, error) {
	if p.Iters == 0 {
		p.Iters = DefaultPlanIters
	}
	if p.Warmup == nil {
		p.Warmup = ptr(DefaultPlanWarmup)
	}
	if p.Check == nil {
		p.Check = ptr(true)
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultPlanTimeout
	}
	if p.Rounds == 0 {
		p.Rounds = 1
	}
	switch {
	case p.Iters < 1:
		return nil, fmt.Errorf("plan: iters %d: must be at least 1", p.Iters)
	case *p.Warmup < 0:
		return nil, fmt.Errorf("plan: warmup %d: must be 0 or more", *p.Warmup)
	case p.Timeout < MinTimeout:
		return nil, fmt.Errorf("plan: timeout %v: too short (accepted: %v or more)", p.Timeout, MinTimeout)
	case p.TimeBudget < 0:
		return nil, fmt.Errorf("plan: time_budget %v: must be 0 (none) or positive", p.TimeBudget)
	case p.Rounds < 1 || p.Rounds > MaxRounds:
		return nil, fmt.Errorf("plan: rounds %d: want an integer from 1 to %d", p.Rounds, MaxRounds)
	case len(p.Collectives)+len(p.Gradients)+len(p.Training) == 0:
		return nil, errors.New("plan: nothing to measure: no collectives, gradients or training blocks")
	}
	x := &expander{plan: p, exp: &Expanded{Plan: p}, specs: map[string]*Group{}, seen: map[string]bool{}}
	for i := range p.Collectives {
		if err := x.collectives(&p.Collectives[i], fmt.Sprintf("collectives[%d]", i)); err != nil {
			return nil, err
		}
	}
	for i := range p.Gradients {
		if err := x.gradients(&p.Gradients[i], fmt.Sprintf("gradients[%d]", i)); err != nil {
			return nil, err
		}
	}
	if err := x.peers(); err != nil {
		return nil, err
	}
	for i := range p.Training {
		if err := x.training(&p.Training[i], fmt.Sprintf("training[%d]", i)); err != nil {
			return nil, err
		}
	}
	// Only a strategy's collective points are measured in rounds: a
	// training run is one long measurement of its own, a peer is not what
	// is under test, and a group that cannot run here has nothing to
	// repeat.
	for _, g := range x.exp.Groups {
		g.Rounds = 1
		if g.Spec != nil && g.Spec.Train == nil && g.Skip == "" {
			g.Rounds = int(p.Rounds)
		}
	}
	// The last word on every launch is Spec.Validate, which the workers
	// run too: what passes here cannot fail there. A sweep launches its
	// worlds here, so every rank's buffers must fit in this machine.
	for _, g := range x.exp.Groups {
		if g.Spec != nil && g.Skip == "" {
			if err := g.Spec.Validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", g.Name(), err)
			}
			if err := g.Spec.CheckMemory(g.Spec.NP); err != nil {
				return nil, fmt.Errorf("%s: %w", g.Name(), err)
			}
		}
	}
	if x.exp.NumPoints() == 0 {
		return nil, fmt.Errorf("plan: nothing can run here: %s", strings.Join(x.exp.Notes, "; "))
	}
	return x.exp, nil
}

func ptr[T any](v T) *T { return &v }

type expander struct {
	plan  *Plan
	exp   *Expanded
	specs map[string]*Group // by launch key
	seen  map[string]bool   // point ids
	// allreduce[np] holds the float32 sum unshaped allreduce sizes, for
	// the peers.
	allreduce map[int][]int64
}

func (x *expander) note(s string) {
	if !slices.Contains(x.exp.Notes, s) {
		x.exp.Notes = append(x.exp.Notes, s)
	}
}

// strategies resolves a block's strategy list: "all" becomes every
// registered strategy that can run here. Each name maps to why it cannot
// run here ("" if it can).
func (x *expander) strategies(names []string, where string) ([]string, map[string]string, error) {
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%s: strategies: missing (registered: %s, or %s)", where, strings.Join(collective.Strategies(), ", "), AllStrategies)
	}
	var out []string
	why := map[string]string{}
	for _, n := range names {
		if n == AllStrategies {
			for _, s := range collective.Strategies() {
				if reason := unavailable(s); reason != "" {
					x.note(fmt.Sprintf("%s: %s", where, reason))
					continue
				}
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			continue
		}
		if _, err := collective.Lookup(n); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
			why[n] = unavailable(n)
		}
	}
	return out, why, nil
}

func unavailable(strategy string) string {
	st, err := collective.Lookup(strategy)
	if err != nil {
		return err.Error()
	}
	if a, ok := st.(collective.Availability); ok {
		if err := a.Available(); err != nil {
			return fmt.Sprintf("strategy %s cannot run here: %v", strategy, err)
		}
	}
	return ""
}

func checkNP(nps []int, where string) error {
	if len(nps) == 0 {
		return fmt.Errorf("%s: np: missing (a list of world sizes, such as [2, 4])", where)
	}
	for _, n := range nps {
		if n < 1 || n > MaxProcesses {
			return fmt.Errorf("%s: np %d: must be between 1 and %d", where, n, MaxProcesses)
		}
	}
	return nil
}

func checkLinks(links []string, where string) ([]string, error) {
	if len(links) == 0 {
		return []string{""}, nil
	}
	out := make([]string, 0, len(links))
	for _, l := range links {
		if _, err := transport.ParseLink(l); err != nil {
			return nil, fmt.Errorf("%s: links: %w", where, err)
		}
		// "none" is unshaped, and one point id for it is enough.
		if l = strings.TrimSpace(l); strings.EqualFold(l, "none") {
			l = ""
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

func checkOptions(strategy string, opts map[string]string, where string) error {
	st, _ := collective.Lookup(strategy)
	if v, ok := st.(collective.OptionValidator); ok {
		if err := v.ValidateOptions(opts); err != nil {
			return fmt.Errorf("%s: strategy %s: %w", where, strategy, err)
		}
	}
	return nil
}

// group returns the launch for a key, creating it.
func (x *expander) group(strategy string, np int, link string, opts map[string]string, iters, warmup int, skip string) *Group {
	key := fmt.Sprintf("%s\x00%d\x00%s\x00%v\x00%d\x00%d", strategy, np, link, opts, iters, warmup)
	if g, ok := x.specs[key]; ok {
		return g
	}
	if len(opts) == 0 {
		opts = nil
	}
	g := &Group{Skip: skip, Spec: &Spec{
		Strategy: strategy, NP: np, Options: maps.Clone(opts), Link: link, Timeout: x.plan.Timeout,
		Iters: iters, Warmup: warmup, Check: *x.plan.Check, KeepSamples: true, TimeBudget: x.plan.TimeBudget,
	}}
	x.specs[key] = g
	x.exp.Groups = append(x.exp.Groups, g)
	return g
}

// add puts p into g unless a point with its id is planned already.
func (x *expander) add(g *Group, p Point, about string) {
	s := g.Spec
	id := s.PointID(p)
	if x.seen[id] {
		return
	}
	x.seen[id] = true
	s.Points = append(s.Points, p)
	rec := pointRecord(s, p)
	desc := fmt.Sprintf("%s %s np=%d %s %s", p.Collective, s.Strategy, s.NP, results.FormatSize(rec.Bytes), rec.DType)
	if rec.Op != "" && rec.Op != "sum" {
		desc += " " + rec.Op
	}
	if !p.InPlace {
		desc += " out-of-place"
	}
	if s.Link != "" {
		desc += " link=" + s.Link
	}
	if about != "" {
		desc += " (" + about + ")"
	}
	g.Points = append(g.Points, PlannedPoint{ID: id, Desc: desc, Record: *rec})
	if p.Collective == "allreduce" && rec.DType == "float32" && rec.Op == "sum" && s.Link == "" && rec.Bytes > 0 {
		if x.allreduce == nil {
			x.allreduce = map[int][]int64{}
		}
		if !slices.Contains(x.allreduce[s.NP], rec.Bytes) {
			x.allreduce[s.NP] = append(x.allreduce[s.NP], rec.Bytes)
		}
	}
}

func (x *expander) collectives(b *CollectiveBlock, where string) error {
	strategies, why, err := x.strategies(b.Strategies, where)
	if err != nil {
		return err
	}
	if err := checkNP(b.NP, where); err != nil {
		return err
	}
	if len(b.Collectives) == 0 {
		return fmt.Errorf("%s: collectives: missing (accepted: %s)", where, strings.Join(Collectives(), ", "))
	}
	for _, c := range b.Collectives {
		if _, ok := benchmarks[c]; !ok {
			return fmt.Errorf("%s: unknown collective %q (accepted: %s)", where, c, strings.Join(Collectives(), ", "))
		}
	}
	dtNames := b.DTypes
	if len(dtNames) == 0 {
		dtNames = []string{"float32"}
	}
	var dts []collective.DType
	for _, d := range dtNames {
		dt, err := collective.ParseDType(d)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		dts = append(dts, dt)
	}
	ops := b.Ops
	if len(ops) == 0 {
		ops = []string{"sum"}
	}
	for _, o := range ops {
		if _, err := collective.ParseOp(o); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	var modes []bool
	switch b.InPlace {
	case "in", "":
		modes = []bool{true}
	case "out":
		modes = []bool{false}
	case "both":
		modes = []bool{false, true}
	default:
		return fmt.Errorf("%s: inplace %q (accepted: in, out, both)", where, b.InPlace)
	}
	sizes, err := b.Sizes.expand(dts)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	links, err := checkLinks(b.Links, where)
	if err != nil {
		return err
	}
	iters, warmup := x.plan.Iters, *x.plan.Warmup
	if b.Iters != 0 {
		iters = b.Iters
	}
	if b.Warmup != nil {
		warmup = *b.Warmup
	}
	if iters < 1 || warmup < 0 {
		return fmt.Errorf("%s: iters %d, warmup %d: want iters ≥ 1 and warmup ≥ 0", where, iters, warmup)
	}
	for _, np := range b.NP {
		if b.Root < 0 || b.Root >= np {
			return fmt.Errorf("%s: root %d out of range for np %d (accepted: 0..%d)", where, b.Root, np, np-1)
		}
	}
	for _, st := range strategies {
		if err := checkOptions(st, b.Options, where); err != nil {
			return err
		}
		if why[st] != "" && x.plan.SkipUnavailable {
			x.note(fmt.Sprintf("%s: %s", where, why[st]))
			continue
		}
		for _, np := range b.NP {
			for _, link := range links {
				g := x.group(st, np, link, b.Options, iters, warmup, why[st])
				for _, c := range b.Collectives {
					for _, dt := range dts {
						for _, op := range ops {
							if !benchmarks[c].reduces && op != ops[0] {
								continue // one point, whatever the op
							}
							for _, s := range sizes {
								for _, in := range modes {
									x.add(g, Point{Collective: c, Bytes: s, DType: dt.String(), Op: op, Root: b.Root, InPlace: in}, b.about)
								}
							}
						}
					}
				}
			}
		}
	}
	return nil
}

// modelInputs are the input shapes a gradient block may name.
var modelInputs = map[string]models.Shape{
	"mnist": models.MNIST, "fashion-mnist": models.MNIST, "cifar10": models.CIFAR10, "imagenet": models.ImageNet,
}

// defaultInput is each built-in model's usual input.
var defaultInput = map[string]string{
	"mlp": "mnist", "lenet": "mnist", "resnet20": "cifar10", "resnet18": "imagenet", "resnet50": "imagenet",
}

func parseShape(s string) (models.Shape, error) {
	if sh, ok := modelInputs[strings.ToLower(s)]; ok {
		return sh, nil
	}
	parts := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == 'x' || r == '×' || r == ',' })
	if len(parts) == 3 {
		var v [3]int
		ok := true
		for i, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			ok = ok && err == nil && n > 0
			v[i] = n
		}
		if ok {
			return models.Shape{C: v[0], H: v[1], W: v[2]}, nil
		}
	}
	names := slices.Sorted(maps.Keys(modelInputs))
	return models.Shape{}, fmt.Errorf("input %q (accepted: %s, or CxHxW such as 3x32x32)", s, strings.Join(names, ", "))
}

func (x *expander) gradients(b *GradientBlock, where string) error {
	if b.Model == "" {
		return fmt.Errorf("%s: model: missing (accepted: %s)", where, strings.Join(models.Names(), ", "))
	}
	input := b.Input
	if input == "" {
		if input = defaultInput[b.Model]; input == "" {
			return fmt.Errorf("%s: input: missing for model %s (accepted: mnist, cifar10, imagenet or CxHxW)", where, b.Model)
		}
	}
	shape, err := parseShape(input)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	classes := b.Classes
	if classes == 0 {
		classes = 10
		if shape == models.ImageNet {
			classes = 1000
		}
	}
	if b.BucketCapMB < 0 || math.IsNaN(b.BucketCapMB) {
		return fmt.Errorf("%s: bucket_cap_mb %v: must be positive (0 means DDP's 25)", where, b.BucketCapMB)
	}
	prof, err := models.Profile(b.Model, shape, classes)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	sizes := prof.BucketBytes(b.BucketCapMB)
	cb := CollectiveBlock{
		Strategies: b.Strategies, NP: b.NP, Collectives: []string{"allreduce"}, Links: b.Links, Options: b.Options,
	}
	for i, s := range sizes {
		cb.Sizes.List = append(cb.Sizes.List, strconv.Itoa(s))
		if i == 0 {
			cb.about = fmt.Sprintf("%s DDP bucket", b.Model)
		}
	}
	if len(sizes) == 0 {
		return fmt.Errorf("%s: model %s has no gradients to replay", where, b.Model)
	}
	return x.collectives(&cb, where)
}

func (x *expander) peers() error {
	for _, name := range x.plan.Peers {
		if !slices.Contains(peers.Names(), name) {
			return fmt.Errorf("plan: peers: unknown peer %q (accepted: %s)", name, strings.Join(peers.Names(), ", "))
		}
	}
	if len(x.plan.Peers) == 0 {
		return nil
	}
	nps := slices.Sorted(maps.Keys(x.allreduce))
	if len(nps) == 0 {
		return errors.New("plan: peers: the plan has no unshaped float32 sum allreduce points for the peers to replay")
	}
	for _, name := range slices.Compact(slices.Clone(x.plan.Peers)) {
		avail := peers.Available(name)
		if avail != nil && x.plan.SkipUnavailable {
			x.note("plan: peers: " + avail.Error())
			continue
		}
		for _, np := range nps {
			sizes := slices.Sorted(slices.Values(x.allreduce[np]))
			job := peers.Job{
				NP: np, Sizes: sizes, Iters: x.plan.Iters, Warmup: *x.plan.Warmup, Check: *x.plan.Check,
				Timeout: x.plan.Timeout, TimeBudget: x.plan.TimeBudget,
			}
			g := &Group{Peer: &PeerJob{Peer: name, Job: job, Avail: avail}}
			if avail != nil {
				g.Skip = avail.Error()
			}
			for _, s := range sizes {
				rec := peers.Skeleton(name, np, s)
				g.Points = append(g.Points, PlannedPoint{
					ID: rec.Point, Record: *rec,
					Desc: fmt.Sprintf("allreduce %s (peer) np=%d %s float32", name, np, results.FormatSize(s)),
				})
			}
			x.exp.Groups = append(x.exp.Groups, g)
		}
	}
	return nil
}

func (x *expander) training(b *TrainingBlock, where string) error {
	cfg := train.Config{
		Model: b.Model, Dataset: b.Dataset, DataDir: b.DataDir, Mode: b.Mode, Epochs: b.Epochs, MaxSteps: b.Steps,
		Batch: b.Batch, LR: b.LR, LRSchedule: b.LRSchedule, LRWarmup: b.LRWarmup,
		Momentum: DefaultTrainMomentum, BucketMiB: b.BucketCapMB, Seed: b.Seed,
	}
	if cfg.Mode == "" {
		cfg.Mode = "ddp"
	}
	if cfg.Epochs == 0 {
		cfg.Epochs = 1
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultTrainBatch
	}
	if cfg.LR == 0 {
		cfg.LR = DefaultTrainLR
	}
	if b.Momentum != nil {
		cfg.Momentum = *b.Momentum
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if b.Steps < 0 {
		return fmt.Errorf("%s: steps %d: must not be negative", where, b.Steps)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = data.DefaultDir(cfg.Dataset)
	}
	if abs, err := filepath.Abs(cfg.DataDir); err == nil {
		cfg.DataDir = abs // the workers may start elsewhere
	}
	strategies, why, err := x.strategies(b.Strategies, where)
	if err != nil {
		return err
	}
	if err := checkNP(b.NP, where); err != nil {
		return err
	}
	for _, np := range b.NP {
		if err := cfg.Validate(np); err != nil {
			return fmt.Errorf("%s: np %d: %w", where, np, err)
		}
	}
	links, err := checkLinks(b.Links, where)
	if err != nil {
		return err
	}
	// A dataset that is not here cannot be trained on: like a missing
	// GPU, that is the machine's lack, not a bad plan.
	noData := ""
	if st, err := os.Stat(cfg.DataDir); err != nil || !st.IsDir() {
		noData = fmt.Sprintf("dataset %s not found in %s (run 'make data', or set data_dir)", cfg.Dataset, cfg.DataDir)
	}
	for _, st := range strategies {
		if err := checkOptions(st, b.Options, where); err != nil {
			return err
		}
		skip := cmp.Or(why[st], noData)
		if skip != "" && x.plan.SkipUnavailable {
			x.note(fmt.Sprintf("%s: %s", where, skip))
			continue
		}
		for _, np := range b.NP {
			for _, link := range links {
				c := cfg
				spec := &Spec{
					Strategy: st, NP: np, Options: maps.Clone(b.Options), Link: link, Timeout: x.plan.Timeout,
					Iters: 1, Train: &c,
				}
				if len(spec.Options) == 0 {
					spec.Options = nil
				}
				id := trainID(spec)
				if x.seen[id] {
					continue
				}
				x.seen[id] = true
				rec := results.Record{
					Kind: results.KindTrainEpoch, Point: id, Model: c.Model, Dataset: c.Dataset, Mode: c.Mode,
					Strategy: st, NP: np, Link: link, Options: spec.Options, Root: -1, Wrong: -1,
				}
				x.exp.Groups = append(x.exp.Groups, &Group{
					Spec: spec, Skip: skip,
					Points: []PlannedPoint{{ID: id, Desc: "train " + strings.TrimPrefix(id, "train/"), Record: rec}},
				})
			}
		}
	}
	return nil
}

// trainID identifies a training run by everything that changes what it
// measures.
func trainID(s *Spec) string {
	c := s.Train
	id := fmt.Sprintf("train/%s/%s/%s/%s/np=%d/epochs=%d", c.Model, c.Dataset, c.Mode, s.Strategy, s.NP, c.Epochs)
	if c.MaxSteps > 0 {
		id += fmt.Sprintf("/steps=%d", c.MaxSteps)
	}
	id += fmt.Sprintf("/batch=%d/lr=%s/momentum=%s/seed=%d", c.Batch,
		strconv.FormatFloat(c.LR, 'g', -1, 64), strconv.FormatFloat(c.Momentum, 'g', -1, 64), c.Seed)
	if c.LRSchedule != "" && c.LRSchedule != "constant" {
		id += "/lr_schedule=" + c.LRSchedule
	}
	if c.LRWarmup > 0 {
		id += fmt.Sprintf("/lr_warmup=%d", c.LRWarmup)
	}
	if c.BucketMiB > 0 {
		id += "/bucket_mb=" + strconv.FormatFloat(c.BucketMiB, 'g', -1, 64)
	}
	if s.Link != "" {
		id += "/link=" + s.Link
	}
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		id += "/" + k + "=" + s.Options[k]
	}
	return id
}
