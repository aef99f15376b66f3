package plan

import (
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultYAML is the plan `distbench sweep` runs when given none: every
// strategy that can run here, at np 2 and 4, allreduce from 4 KiB to 16 MiB
// and allgather at a few sizes, sized to finish in a few minutes on a 2-core
// machine.
//
//go:embed default.yaml
var DefaultYAML []byte

// AllStrategies in a plan's strategy list stands for every registered
// strategy that can run on this machine (collective.Availability).
const AllStrategies = "all"

// Plan defaults, where a plan leaves a setting out. Sweeps measure in place
// by default: it is what torch.distributed and the peers (MPI_IN_PLACE,
// gloo) do, so their lines share a plot, and it halves the sweep.
const (
	DefaultIters   = 20
	DefaultWarmup  = 5
	DefaultTimeout = 2 * time.Minute
	DefaultInPlace = "in"
)

// Plan is a sweep as written in a plan file (YAML) or built from flags:
// blocks whose cross products are the points to measure. [Plan.Expand]
// validates it and turns it into launches. docs/guide/sweep.md's "Plans" section
// documents the schema with testdata/example.yaml, which the golden test
// expands, so the example cannot go stale; default.yaml is a complete plan.
type Plan struct {
	Name string `yaml:"name,omitempty"`
	// Settings every block inherits; a block may override iters and warmup.
	Iters      int           `yaml:"iters,omitempty" zero:"the default, 20"`
	Warmup     *int          `yaml:"warmup,omitempty"`
	Check      *bool         `yaml:"check,omitempty"`                          // default true
	Timeout    time.Duration `yaml:"timeout,omitempty" zero:"the default, 2m"` // per operation
	TimeBudget time.Duration `yaml:"time_budget,omitempty"`                    // per point, see job.Spec.TimeBudget
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
	// but at least job.MinBudgetIters, or iters if fewer; and time_budget/rounds
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

// CollectiveBlock is strategies × np × links × devices × collectives ×
// dtypes × ops × sizes × in-place forms.
type CollectiveBlock struct {
	Strategies  []string `yaml:"strategies"`
	NP          []int    `yaml:"np"`
	Collectives []string `yaml:"collectives"`
	Sizes       Sizes    `yaml:"sizes"`
	DTypes      []string `yaml:"dtypes,omitempty"`  // default float32
	Ops         []string `yaml:"ops,omitempty"`     // default sum
	InPlace     string   `yaml:"inplace,omitempty"` // in, out or both; default in
	Links       []string `yaml:"links,omitempty"`   // "" is unshaped; default [""]
	// Transports: what carries same-host pairs, one launch each: tcp,
	// auto (shared memory within a host, TCP across) or shm; default [tcp].
	Transports []string `yaml:"transports,omitempty"`
	Devices    []string `yaml:"devices,omitempty"` // where buffers live: cpu, cuda; default [cpu]
	// Hosts lays a local launch's ranks out on simulated hosts, as `run
	// --hosts`: each layout ("2x2", "3,1") is a launch of its own at the
	// world size it lays out, and "" is none. Every np must have a layout
	// ("" included); default [""].
	Hosts   []string          `yaml:"hosts,omitempty"`
	Options map[string]string `yaml:"options,omitempty"` // strategy options
	Root    int               `yaml:"root,omitempty"`
	Iters   int               `yaml:"iters,omitempty" zero:"the plan's iters"`
	Warmup  *int              `yaml:"warmup,omitempty"`

	about string // what the points replay, for progress lines and Record.Workload
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
	TestSamples int               `yaml:"test_samples,omitempty"`                  // evaluated; 0 is the whole test set
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
