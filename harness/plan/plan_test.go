package plan

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/workloads/models"
)

func expand(t *testing.T, src string) (*Expanded, error) {
	t.Helper()
	p, err := Parse([]byte(src))
	if err != nil {
		return nil, err
	}
	return p.Expand()
}

func TestDefaultPlan(t *testing.T) {
	exp, err := expand(t, string(DefaultYAML))
	if err != nil {
		t.Fatal(err)
	}
	// Every strategy that can run here, at np 2 and 4, each world one launch.
	var want []string
	for _, s := range collective.Strategies() {
		if unavailable(s) == "" {
			want = append(want, s)
		}
	}
	got := map[string]bool{}
	collectives, training := 0, 0
	for _, g := range exp.Groups {
		switch {
		case g.Spec == nil:
			t.Errorf("default plan has a peer launch %s", g.Name())
			continue
		case g.Spec.Train != nil:
			training++
			if g.Rounds != 1 {
				t.Errorf("training in %d rounds, want 1", g.Rounds)
			}
			continue
		}
		collectives++
		got[g.Spec.Strategy] = true
		// In rounds, the point's 24 iterations split across them.
		if g.Rounds != 6 {
			t.Errorf("%s: %d rounds, want 6", g.Name(), g.Rounds)
		}
		total := 0
		for k := 1; k <= g.Rounds; k++ {
			rs := g.RoundSpec(k)
			total += rs.Iters
			if rs.TimeBudget != g.Spec.TimeBudget/6 || rs.Warmup != g.Spec.Warmup {
				t.Errorf("%s round %d: budget %v, warmup %d", g.Name(), k, rs.TimeBudget, rs.Warmup)
			}
		}
		if total != g.Spec.Iters {
			t.Errorf("%s: rounds of %d iterations in all, want %d", g.Name(), total, g.Spec.Iters)
		}
		if g.Spec.NP != 2 && g.Spec.NP != 4 {
			t.Errorf("np %d", g.Spec.NP)
		}
		if !g.Spec.Check || !g.Spec.KeepSamples || g.Spec.TimeBudget <= 0 {
			t.Errorf("%s: check %v, keep samples %v, budget %v", g.Name(), g.Spec.Check, g.Spec.KeepSamples, g.Spec.TimeBudget)
		}
	}
	for _, s := range want {
		if !got[s] {
			t.Errorf("strategy %s is missing from the default plan", s)
		}
	}
	// Every strategy at both world sizes, the parameter server over gRPC
	// at np 2 beside it, and ring and tree at np 2 in shared memory too.
	if collectives != 2*len(got)+1+2 {
		t.Errorf("%d launches for %d strategies × 2 world sizes, ps/grpc at np 2 and ring and tree over shm at np 2", collectives, len(got))
	}
	shm := 0
	for _, g := range exp.Groups {
		if g.Spec != nil && g.Spec.Transport == "shm" && g.Spec.NP == 2 {
			shm++
		}
	}
	if shm != 2 {
		t.Errorf("%d launches over shared memory, want ring and tree at np 2", shm)
	}
	ids := exp.IDs()
	if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		t.Errorf("duplicate point ids in %v", ids)
	}
	// Short training runs, or, without the dataset here, a note why not.
	noted := slices.ContainsFunc(exp.Notes, func(n string) bool { return strings.Contains(n, "training[0]: dataset mnist not found") })
	if (training > 0) == noted {
		t.Errorf("%d training launches, notes %q", training, exp.Notes)
	}
	// DataParallel's pattern (dp) trains beside DDP and the synchronous
	// parameter server, on the same model, data and steps.
	p, err := Parse(DefaultYAML)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]string{} // mode: its model/dataset/steps/batch
	for _, b := range p.Training {
		modes[b.Mode] += fmt.Sprintf("%s/%s/steps=%d/batch=%d ", b.Model, b.Dataset, b.Steps, b.Batch)
	}
	for _, m := range []string{"ddp", "dp", "ps-sync"} {
		if !strings.Contains(modes[m], "lenet/mnist/steps=25/batch=64") {
			t.Errorf("the default plan's %s training: %q, want LeNet on MNIST as the others", m, modes[m])
		}
	}
}

func TestPlanGood(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		groups int
		points int
		check  func(t *testing.T, e *Expanded)
	}{
		{
			name: "list sizes, both forms, two links",
			src: `
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce, broadcast]
    sizes: [4KiB, 1MiB]
    inplace: both
    links: ["", "10Gbit,25us"]
`,
			groups: 2, points: 2 * 2 * 2 * 2,
			check: func(t *testing.T, e *Expanded) {
				if e.Groups[1].Spec.Link != "10Gbit,25us" {
					t.Errorf("link %q", e.Groups[1].Spec.Link)
				}
			},
		},
		{
			name: "per-rank links: an override alone applies to every link",
			src: `
collectives:
  - strategies: [ring]
    np: [4]
    collectives: [allreduce]
    sizes: [4KiB]
    links: ["", "10Gbit,25us", "rank3=100mbit"]
`,
			groups: 2, points: 2,
			check: func(t *testing.T, e *Expanded) {
				if got := []string{e.Groups[0].Spec.Link, e.Groups[1].Spec.Link}; got[0] != "rank3=100Mbit" || got[1] != "10Gbit,25us;rank3=100Mbit" {
					t.Errorf("links %q", got)
				}
			},
		},
		{
			name: "range with step; ops apply to reducing collectives only",
			src: `
iters: 7
warmup: 0
check: false
collectives:
  - strategies: [ring]
    np: [3]
    collectives: [allreduce, allgather]
    sizes: {min: 1KiB, max: 3KiB, step: 1KiB}
    ops: [sum, max]
`,
			groups: 1, points: 3*2 + 3,
			check: func(t *testing.T, e *Expanded) {
				s := e.Groups[0].Spec
				if s.Iters != 7 || s.Warmup != 0 || s.Check {
					t.Errorf("iters %d warmup %d check %v", s.Iters, s.Warmup, s.Check)
				}
			},
		},
		{
			name: "blocks naming the same world share a launch; repeated points are measured once",
			src: `
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB, 8KiB]
  - strategies: [all]
    np: [2]
    collectives: [allreduce, allgather]
    sizes: [8KiB]
    links: [none, ""]
`,
			check: func(t *testing.T, e *Expanded) {
				var ring []*Group
				for _, g := range e.Groups {
					if g.Spec.Strategy == "ring" {
						ring = append(ring, g)
					}
				}
				if len(ring) != 1 || len(ring[0].Points) != 3 {
					t.Errorf("ring: %d launches, want 1 with 3 points", len(ring))
				}
			},
		},
		{
			name: "gradient profile replays DDP buckets",
			src: `
gradients:
  - model: resnet20
    strategies: [ring]
    np: [2, 4]
    bucket_cap_mb: 0.5
`,
			check: func(t *testing.T, e *Expanded) {
				prof, err := models.Profile("resnet20", models.CIFAR10, 10)
				if err != nil {
					t.Fatal(err)
				}
				want := map[int64]bool{}
				for _, b := range prof.BucketBytes(0.5) {
					want[int64(b)] = true
				}
				if len(e.Groups) != 2 || len(e.Groups[0].Points) != len(want) {
					t.Fatalf("%d launches, %d points; want 2 with %d", len(e.Groups), len(e.Groups[0].Points), len(want))
				}
				for _, p := range e.Groups[0].Points {
					if !want[p.Record.Bytes] || p.Record.Collective != "allreduce" || !p.Record.InPlace {
						t.Errorf("point %s", p.ID)
					}
					if !strings.Contains(p.Desc, "resnet20 DDP bucket") {
						t.Errorf("desc %q", p.Desc)
					}
				}
			},
		},
		{
			name: "peers replay the unshaped float32 sum allreduce sizes per world size",
			src: `
peers: [mpi, gloo]
collectives:
  - strategies: [ring]
    np: [2, 4]
    collectives: [allreduce]
    sizes: [4KiB, 1MiB]
    links: ["", 1g]
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    dtypes: [float64]
    sizes: [64KiB]
`,
			check: func(t *testing.T, e *Expanded) {
				var n int
				for _, g := range e.Groups {
					if g.Peer == nil {
						continue
					}
					n++
					if !slices.Equal(g.Peer.Job.Sizes, []int64{4096, 1 << 20}) {
						t.Errorf("%s: sizes %v", g.Name(), g.Peer.Job.Sizes)
					}
					if (g.Skip != "") != (g.Peer.Avail != nil) {
						t.Errorf("%s: skip %q, avail %v", g.Name(), g.Skip, g.Peer.Avail)
					}
				}
				if n != 4 {
					t.Errorf("%d peer launches, want mpi and gloo at np 2 and 4", n)
				}
			},
		},
		{
			name: "rounds: collective launches in rounds, training and unavailable strategies once",
			src: `
rounds: 4
iters: 10
time_budget: 2s
collectives:
  - strategies: [ring, testunavailable]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB]
training:
  - model: lenet
    dataset: mnist
    data_dir: .
    strategies: [ring]
    np: [2]
    steps: 10
`,
			groups: 3, points: 3,
			check: func(t *testing.T, e *Expanded) {
				if e.Rounds() != 4 || e.NumMeasurements() != 4+1+1 || e.NumLaunches() != 6 {
					t.Errorf("rounds %d, %d measurements, %d launches; want 4, 6, 6", e.Rounds(), e.NumMeasurements(), e.NumLaunches())
				}
				for _, g := range e.Groups {
					want := 1
					if g.Spec != nil && g.Spec.Train == nil && g.Skip == "" {
						want = 4
					}
					if g.Rounds != want {
						t.Errorf("%s: %d rounds, want %d", g.Name(), g.Rounds, want)
					}
				}
				var iters []int
				ring := e.Groups[0]
				for k := 1; k <= ring.Rounds; k++ {
					iters = append(iters, ring.RoundSpec(k).Iters)
					if b := ring.RoundSpec(k).TimeBudget; b != 500*time.Millisecond {
						t.Errorf("round %d: budget %v, want 500ms", k, b)
					}
				}
				if !slices.Equal(iters, []int{3, 3, 3, 3}) {
					t.Errorf("iterations by round %v; want 3 each (2.5 rounded up to the minimum of 3)", iters)
				}
				if train := e.Groups[2].RoundSpec(1); train.Iters != 1 || train.Train == nil {
					t.Errorf("training round spec %+v", train)
				}
			},
		},
		{
			name: "training run with defaults",
			src: `
training:
  - model: lenet
    dataset: mnist
    data_dir: .
    strategies: [ring]
    np: [2, 4]
    steps: 10
`,
			groups: 2, points: 2,
			check: func(t *testing.T, e *Expanded) {
				g := e.Groups[0]
				c := g.Spec.Train
				if c == nil || g.Skip != "" || c.Mode != "ddp" || c.Epochs != 1 || c.MaxSteps != 10 || c.Batch != DefaultTrainBatch || !filepath.IsAbs(c.DataDir) {
					t.Errorf("train %+v skip %q", c, g.Skip)
				}
				if want := "train/lenet/mnist/ddp/ring/np=2/epochs=1/steps=10/batch=128/lr=0.01/momentum=0.5/seed=1"; g.Points[0].ID != want {
					t.Errorf("id %q, want %q", g.Points[0].ID, want)
				}
			},
		},
		{
			name: "training in DataParallel's pattern: mode dp over any strategy, shaped",
			src: `
training:
  - model: resnet20
    dataset: mnist
    data_dir: .
    mode: dp
    strategies: [ring, tree, ps]
    np: [4]
    links: ["10Gbit,25us"]
    steps: 12
    test_samples: 1000
    batch: 32
`,
			groups: 3, points: 3,
			check: func(t *testing.T, e *Expanded) {
				for _, g := range e.Groups {
					if c := g.Spec.Train; c == nil || c.Mode != "dp" || c.TestSamples != 1000 || g.Spec.Link != "10Gbit,25us" || g.Points[0].Record.Mode != "dp" {
						t.Errorf("%s: train %+v link %q", g.Name(), c, g.Spec.Link)
					}
				}
				if want := "train/resnet20/mnist/dp/tree/np=4/epochs=1/steps=12/test_samples=1000/batch=32/lr=0.01/momentum=0.5/seed=1/link=10Gbit,25us"; e.Groups[1].Points[0].ID != want {
					t.Errorf("id %q, want %q", e.Groups[1].Points[0].ID, want)
				}
			},
		},
		{
			name: "training with a learning-rate schedule: the schedule is part of the point",
			src: `
training:
  - model: lenet
    dataset: mnist
    data_dir: .
    strategies: [ring]
    np: [2]
    epochs: 3
    lr: 0.1
    lr_schedule: multistep:1,2:0.1
    lr_warmup: 1
`,
			groups: 1, points: 1,
			check: func(t *testing.T, e *Expanded) {
				g := e.Groups[0]
				if c := g.Spec.Train; c.LRSchedule != "multistep:1,2:0.1" || c.LRWarmup != 1 {
					t.Errorf("train %+v", c)
				}
				if want := "train/lenet/mnist/ddp/ring/np=2/epochs=3/batch=128/lr=0.1/momentum=0.5/seed=1/lr_schedule=multistep:1,2:0.1/lr_warmup=1"; g.Points[0].ID != want {
					t.Errorf("id %q, want %q", g.Points[0].ID, want)
				}
			},
		},
		{
			name: "training without its dataset is recorded as skipped",
			src: `
training:
  - model: mlp
    dataset: fashion-mnist
    data_dir: /nonexistent/fashion
    strategies: [ring]
    np: [2]
`,
			groups: 1, points: 1,
			check: func(t *testing.T, e *Expanded) {
				if g := e.Groups[0]; !strings.Contains(g.Skip, "dataset fashion-mnist not found in /nonexistent/fashion") {
					t.Errorf("skip %q", g.Skip)
				}
			},
		},
		{
			name: "an unavailable strategy named explicitly is recorded as skipped",
			src: `
collectives:
  - strategies: [testunavailable, ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB]
`,
			groups: 2, points: 2,
			check: func(t *testing.T, e *Expanded) {
				if !strings.Contains(e.Groups[0].Skip, "no such device") {
					t.Errorf("skip %q", e.Groups[0].Skip)
				}
			},
		},
		{
			name: "skip_unavailable leaves it out with a note",
			src: `
skip_unavailable: true
collectives:
  - strategies: [testunavailable, ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB]
`,
			groups: 1, points: 1,
			check: func(t *testing.T, e *Expanded) {
				if len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "testunavailable") {
					t.Errorf("notes %q", e.Notes)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := expand(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if tt.groups > 0 && len(e.Groups) != tt.groups {
				t.Errorf("%d launches, want %d", len(e.Groups), tt.groups)
			}
			if tt.points > 0 && e.NumPoints() != tt.points {
				t.Errorf("%d points, want %d: %v", e.NumPoints(), tt.points, e.IDs())
			}
			if tt.check != nil {
				tt.check(t, e)
			}
			// What a sweep saves must read back to the same points.
			b, err := e.Plan.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			again, err := expand(t, string(b))
			if err != nil {
				t.Fatalf("saved plan does not read back: %v\n%s", err, b)
			}
			if !slices.Equal(again.IDs(), e.IDs()) {
				t.Errorf("saved plan expands to other points:\n%s", b)
			}
		})
	}
}

func TestPlanBad(t *testing.T) {
	const block = "\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4KiB]\n"
	tests := []struct{ name, src, want string }{
		{"yaml syntax", "collectives: [", "line"},
		{"empty", "", "empty"},
		{"nothing to measure", "iters: 5\n", "nothing to measure"},
		{"unknown top-level key", "iterations: 5\n", `line 1: plan: unknown key "iterations" (accepted: name, iters,`},
		{"unknown block key", "collectives:\n  - strategies: [ring]" + block + "    colective: x\n", `line 6: plan.collectives[0]: unknown key "colective"`},
		{"unknown sizes key", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 1K, max: 2K, fator: 2}\n", `plan.collectives[0].sizes: unknown key "fator"`},
		{"wrong type", "iters: many\ncollectives: []\n", "many"},
		{"unknown strategy", "collectives:\n  - strategies: [rnig]" + block, `unknown strategy "rnig" (registered:`},
		{"no strategies", "collectives:\n  - np: [2]\n    collectives: [allreduce]\n    sizes: [4K]\n", "strategies: missing"},
		{"unknown collective", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduse]\n    sizes: [4K]\n", `unknown collective "allreduse"`},
		{"unknown dtype", "collectives:\n  - strategies: [ring]" + block + "    dtypes: [float33]\n", "float33"},
		{"unknown op", "collectives:\n  - strategies: [ring]" + block + "    ops: [median]\n", "median"},
		{"bad link", "collectives:\n  - strategies: [ring]" + block + "    links: [fast]\n", `link "fast"`},
		{"bad rank link", "collectives:\n  - strategies: [ring]" + block + "    links: [node3=1g]\n", `"node3" is not rankN`},
		{"bad inplace", "collectives:\n  - strategies: [ring]" + block + "    inplace: yes\n", `inplace "yes"`},
		{"bad option", "collectives:\n  - strategies: [ring]" + block + "    options: {chunk: huge}\n", "strategy ring"},
		{"np missing", "collectives:\n  - strategies: [ring]\n    collectives: [allreduce]\n    sizes: [4K]\n", "np: missing"},
		{"np zero", "collectives:\n  - strategies: [ring]\n    np: [0]\n    collectives: [allreduce]\n    sizes: [4K]\n", "np 0"},
		{"np huge", "collectives:\n  - strategies: [ring]\n    np: [100000]\n    collectives: [allreduce]\n    sizes: [4K]\n", "np 100000"},
		{"sizes missing", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n", "sizes: missing"},
		{"bad size", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4Q]\n", `malformed size "4Q"`},
		{"min above max", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 4M, max: 1M, factor: 2}\n", "larger than max"},
		{"factor 1", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 1K, max: 4M, factor: 1}\n", "factor 1"},
		{"no factor", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 1K, max: 4M}\n", "factor"},
		{"size not a multiple", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [6]\n    dtypes: [float32]\n", "not a multiple of float32"},
		{"root out of range", "collectives:\n  - strategies: [ring]" + block + "    root: 2\n", "root 2 out of range for np 2"},
		{"negative iters", "iters: -1\ncollectives:\n  - strategies: [ring]" + block, "iters -1"},
		{"negative budget", "time_budget: -1s\ncollectives:\n  - strategies: [ring]" + block, "time_budget"},
		{"rounds 0", "rounds: 0\ncollectives:\n  - strategies: [ring]" + block, `line 1: plan: rounds "0": want an integer from 1 to 100`},
		{"rounds negative", "rounds: -2\ncollectives:\n  - strategies: [ring]" + block, `rounds "-2": want an integer from 1 to 100`},
		{"rounds too many", "rounds: 101\ncollectives:\n  - strategies: [ring]" + block, `rounds "101": want an integer from 1 to 100`},
		{"rounds not a number", "iters: 5\nrounds: many\ncollectives:\n  - strategies: [ring]" + block, `line 2: plan: rounds "many": want an integer from 1 to 100`},
		{"rounds fractional", "rounds: 2.5\ncollectives:\n  - strategies: [ring]" + block, `rounds "2.5": want an integer`},
		{"rounds a list", "rounds: [3]\ncollectives:\n  - strategies: [ring]" + block, `rounds (not a number): want an integer`},
		{"bad duration", "timeout: soon\ncollectives:\n  - strategies: [ring]" + block, "soon"},
		{"unknown peer", "peers: [nccl-tests]\ncollectives:\n  - strategies: [ring]" + block, `unknown peer "nccl-tests"`},
		{"peers without allreduce", "peers: [mpi]\ncollectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allgather]\n    sizes: [4K]\n", "no unshaped float32 sum allreduce"},
		{"gradient model", "gradients:\n  - model: gpt5\n    strategies: [ring]\n    np: [2]\n", "gpt5"},
		{"gradient input", "gradients:\n  - model: lenet\n    input: huge\n    strategies: [ring]\n    np: [2]\n", `input "huge"`},
		{"training model", "training:\n  - model: gpt5\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    steps: 1\n", "gpt5"},
		{"training dataset", "training:\n  - model: lenet\n    dataset: imagenet\n    strategies: [ring]\n    np: [2]\n    steps: 1\n", `dataset "imagenet"`},
		{"training mode", "training:\n  - model: lenet\n    dataset: mnist\n    mode: fsdp\n    strategies: [ring]\n    np: [2]\n    steps: 1\n", `mode "fsdp"`},
		{"training batch", "training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    batch: 3\n", "batch 3 must be a positive multiple of np 2"},
		{"training steps", "training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    steps: -1\n", "steps -1"},
		{"training lr schedule", "training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    lr_schedule: linear\n", `"linear"`},
		{"nothing can run", "skip_unavailable: true\ncollectives:\n  - strategies: [testunavailable]" + block, "nothing can run here"},
		// Zero where it would silently mean the default (the CLI refuses
		// --timeout 0), with the line.
		{"timeout 0", "iters: 5\ntimeout: 0s\ncollectives:\n  - strategies: [ring]" + block, "line 2: plan: timeout 0s: must be positive (accepted: a positive value, or leave timeout out for the default, 2m)"},
		{"timeout negative", "timeout: -1s\ncollectives:\n  - strategies: [ring]" + block, "line 1: plan: timeout -1s: must be positive"},
		{"timeout too short", "timeout: 1ns\ncollectives:\n  - strategies: [ring]" + block, "plan: timeout 1ns: too short (accepted: 1s or more)"},
		{"iters 0", "iters: 0\ncollectives:\n  - strategies: [ring]" + block, "line 1: plan: iters 0: must be positive"},
		{"block iters 0", "collectives:\n  - strategies: [ring]" + block + "    iters: 0\n", "line 6: plan.collectives[0]: iters 0: must be positive (accepted: a positive value, or leave iters out for the plan's iters)"},
		{"gradient classes 0", "gradients:\n  - model: lenet\n    classes: 0\n    strategies: [ring]\n    np: [2]\n", "line 3: plan.gradients[0]: classes 0: must be positive"},
		{"training epochs 0", "training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    epochs: 0\n", "line 6: plan.training[0]: epochs 0: must be positive"},
		{"training batch 0", "training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    batch: 0\n", "batch 0: must be positive"},
		{"training lr 0", "training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    lr: 0.0\n", "lr 0.0: must be positive"},
		{"training seed 0", "training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    seed: 0\n", "seed 0: must be positive (accepted: a positive value, or leave seed out for the default, 1)"},
		// A second document would be silently left unmeasured.
		{"second document", "collectives:\n  - strategies: [ring]" + block + "---\nbogus: 1\n", "line 6: plan: a second YAML document (accepted: one document;"},
		{"second document of blocks", "collectives:\n  - strategies: [ring]" + block + "---\ncollectives:\n  - strategies: [tree]" + block, "line 6: plan: a second YAML document"},
		{"second document malformed", "collectives:\n  - strategies: [ring]" + block + "---\n[\n", "line"},
		// Sizes that would not step as asked.
		{"factor NaN", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 4, max: 1G, factor: .nan}\n", "sizes.factor NaN: must be greater than 1"},
		{"factor too fine for too many sizes", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 4, max: 1G, factor: 1.0000001}\n", "more than 4096 sizes from 4 to 1073741824 bytes"},
		{"step not whole elements", "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 8, max: 64, step: 6}\n    dtypes: [float32]\n", "sizes.step 6: not a whole number of elements (accepted: multiples of 4 bytes)"},
		// Workers and dedicated servers together.
		{"processes with servers", "collectives:\n  - strategies: [ps]" + block + "    options: {placement: dedicated, servers: 511}\n", "np 2 and 511 dedicated servers: 513 processes, but at most 512 local processes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := expand(t, tt.src)
			if err == nil {
				t.Fatalf("no error; want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q; want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestRoundIters(t *testing.T) {
	tests := []struct {
		total, rounds int
		want          []int
	}{
		{20, 1, []int{20}},
		{20, 3, []int{7, 7, 6}},
		{21, 3, []int{7, 7, 7}},
		{10, 3, []int{4, 3, 3}},
		{5, 3, []int{3, 3, 3}}, // at least job.MinBudgetIters a round
		{2, 3, []int{2, 2, 2}}, // or the point's iterations, if fewer
		{1, 2, []int{1, 1}},
		{100, 8, []int{13, 13, 13, 13, 12, 12, 12, 12}},
	}
	for _, tt := range tests {
		var got []int
		for k := 1; k <= tt.rounds; k++ {
			got = append(got, roundIters(tt.total, tt.rounds, k))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("roundIters(%d, %d, k) = %v, want %v", tt.total, tt.rounds, got, tt.want)
		}
	}
}

// TestPlanOneDocument: a plan file may end in an empty document (a stray
// "---"), which holds nothing to leave unmeasured.
func TestPlanOneDocument(t *testing.T) {
	for _, src := range []string{"---\ntimeout: 1m\n", "timeout: 1m\n---\n", "timeout: 1m\n---\n# nothing\n", "timeout: 1m\n...\n"} {
		p, err := Parse([]byte(src))
		if err != nil || p.Timeout != time.Minute {
			t.Errorf("Parse(%q) = %+v, %v", src, p, err)
		}
	}
}

// TestPlanMemory: a plan whose points' buffers do not fit in this machine
// is refused before anything starts, naming the point, what it needs and
// what is available; what fits passes.
func TestPlanMemory(t *testing.T) {
	defer func(f func() (int64, string, bool)) { job.AvailableMemory = f }(job.AvailableMemory)
	job.AvailableMemory = func() (int64, string, bool) { return 16 << 30, "MemAvailable in /proc/meminfo", true }
	const plan = "collectives:\n  - strategies: [ring]\n    np: [4]\n    collectives: [allreduce, allgather]\n    inplace: both\n    sizes: [1MiB, %s]\n"
	_, err := expand(t, fmt.Sprintf(plan, "4GiB"))
	want := "ring np=4: allreduce of 4GiB float32 out-of-place needs at least 32GiB of memory here (4 ranks × 8GiB of buffers), " +
		"but 16GiB is available (MemAvailable in /proc/meminfo); 1 other point does not fit either; accepted: sizes whose buffers fit, at most 4GiB a rank here"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
	if _, err := expand(t, fmt.Sprintf(plan, "2GiB")); err != nil {
		t.Errorf("2GiB at np 4 fits in 16GiB: %v", err)
	}
	job.AvailableMemory = func() (int64, string, bool) { return 0, "", false }
	if _, err := expand(t, fmt.Sprintf(plan, "1PiB")); err != nil {
		t.Errorf("where memory is unknown the check passes: %v", err)
	}
}

// TestSizeSteps: sizes grow as nccl-tests' do, rounded to whole elements,
// and a factor too small to advance a size advances it by an element, so a
// range never stops short of its maximum.
func TestSizeSteps(t *testing.T) {
	tests := []struct {
		name        string
		lo, hi      int64
		factor      float64
		step, align int64
		want        []int64
		count       int // when want is too long to write
		err         string
	}{
		{name: "doubling", lo: 4096, hi: 65536, factor: 2, align: 4, want: []int64{4096, 8192, 16384, 32768, 65536}},
		{name: "stops below max", lo: 4096, hi: 6000, factor: 2, align: 4, want: []int64{4096}},
		{name: "one size", lo: 4096, hi: 4096, align: 4, want: []int64{4096}},
		{name: "from zero", lo: 0, hi: 16, factor: 2, align: 4, want: []int64{0, 4, 8, 16}},
		{name: "rounded to elements", lo: 4, hi: 40, factor: 1.5, align: 4, want: []int64{4, 8, 12, 16, 24, 36}},
		{name: "too fine a factor steps by an element", lo: 4, hi: 64, factor: 1.0000001, align: 4, want: []int64{4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64}},
		{name: "then grows", lo: 8, hi: 1 << 20, factor: 1.1, align: 8, count: 114}, // 20 steps of 8 to 160, then ×1.1
		{name: "step", lo: 1 << 20, hi: 4 << 20, step: 1 << 20, align: 4, want: []int64{1 << 20, 2 << 20, 3 << 20, 4 << 20}},
		{name: "huge factor", lo: 4, hi: 1 << 50, factor: 1e300, align: 4, want: []int64{4}},
		{name: "up to the limit", lo: 1, hi: 1 << 50, factor: 2, align: 1, count: 51},
		{name: "too many", lo: 4, hi: 1 << 30, factor: 1.0000001, align: 4, err: "more than 4096 sizes from 4 to 1073741824 bytes (accepted: a larger step or factor)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SizeSteps(tt.lo, tt.hi, tt.factor, tt.step, tt.align)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if tt.count > 0 && len(got) != tt.count {
				t.Errorf("%d sizes, want %d", len(got), tt.count)
			}
			for i, v := range got {
				if v%tt.align != 0 || v > tt.hi || (i > 0 && v <= got[i-1]) {
					t.Fatalf("size %d (%d of %v) not whole, above max or not growing", v, i, got)
				}
			}
		})
	}
}

func TestSizesRange(t *testing.T) {
	s := Sizes{Range: &SizeRange{Min: "4KiB", Max: "16MiB", Factor: 4}}
	got, err := s.expand([]collective.DType{collective.Float32})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// testUnavailable is a strategy that cannot run anywhere, as nccl cannot
// without a GPU.
type testUnavailable struct{}

func (testUnavailable) New(context.Context, collective.Config) (collective.Comm, error) {
	return nil, errors.New("unavailable")
}
func (testUnavailable) Available() error { return errors.New("no such device") }

func init() {
	collective.Register("testunavailable", testUnavailable{})
}
