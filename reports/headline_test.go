package reports

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/golden"
	"github.com/distbench/distbench/results"
)

// The headline's wording, pinned for three recorded runs: one with a clear
// winner, one where ring and tree tie, and one with training whose step
// times favour a strategy the collectives call a tie (the default sweep's
// case: a ranking made by the machine's load, which the headline must not
// repeat).

var headlineSizes = []int64{4 << 10, 64 << 10, 1 << 20, 16 << 20}

// headlineRun writes a finished run of allreduce points from ms at np 2
// and 4, plus extra records.
func headlineRun(ms []model, extra func(*rand.Rand) []results.Record) func(testing.TB, string) {
	return func(t testing.TB, dir string) {
		rng := rand.New(rand.NewPCG(36, 1))
		env := synthEnv
		env.LeftOut = []string{"collectives[0]: strategy nccl cannot run here: no CUDA device"}
		var recs []results.Record
		for _, m := range ms {
			for _, np := range []int{2, 4} {
				for _, b := range headlineSizes {
					recs = append(recs, measure(rng, m, "allreduce", np, b, 30, 1))
				}
			}
		}
		for _, r := range recs {
			env.Planned = append(env.Planned, r.Point)
		}
		if extra != nil {
			recs = append(recs, extra(rng)...)
		}
		w, err := results.NewWriter(dir, env)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			if err := w.Write(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	fastRing = model{strategy: "ring", alphaUs: func(np int) float64 { return 10 * float64(np-1) }, busGBs: func(int) float64 { return 9 }}
	slowTree = model{strategy: "tree", alphaUs: func(np int) float64 { return 25 * float64(np) }, busGBs: func(int) float64 { return 5 }}
	sameTree = model{strategy: "tree", alphaUs: fastRing.alphaUs, busGBs: fastRing.busGBs}
	slowPS   = model{strategy: "ps", alphaUs: func(np int) float64 { return 40 + 5*float64(np) }, busGBs: func(np int) float64 { return 6 / math.Sqrt(float64(np)) }}
)

// headlineTraining is LeNet trained at np 2 by ring and tree (the same
// gradients, so the same accuracy at every step) and by the parameter
// server: tree's steps ran 1.3× faster than ring's in this one run (the
// machine's load), ps's 1.6× slower (its communication).
func headlineTraining(rng *rand.Rand) []results.Record {
	var recs []results.Record
	type way struct {
		strategy, mode     string
		computeMs, exposed float64
	}
	for _, w := range []way{{"ring", "ddp", 52, 6}, {"tree", "ddp", 38, 6}, {"ps", "ps-sync", 45, 50}} {
		wall, step := 0.0, 0
		for e := 1; e <= 4; e++ {
			var loss float64
			for s := 0; s < 25; s++ {
				step++
				loss = 0.2 + 2.1*math.Exp(-float64(step)/30)
				c, x := w.computeMs*(1+0.04*rng.Float64()), w.exposed*(1+0.04*rng.Float64())
				wall += (c + x) / 1e3
				recs = append(recs, results.Record{
					Kind: results.KindTrainStep, Model: "lenet", Dataset: "mnist", Strategy: w.strategy, Mode: w.mode, NP: 2,
					Epoch: e, Step: step, Loss: loss, WallSeconds: wall, ComputeMs: c, CommMs: x * 2, ExposedMs: x,
				})
			}
			wall += 4 // the test evaluation: the same work for every strategy
			acc := 0.9 - 0.5*math.Exp(-float64(e)*1.1)
			recs = append(recs, results.Record{
				Kind: results.KindTrainEpoch, Model: "lenet", Dataset: "mnist", Strategy: w.strategy, Mode: w.mode, NP: 2,
				Epoch: e, Step: step, Loss: loss, TestLoss: loss * 1.1, TestAcc: acc, WallSeconds: wall,
			})
		}
	}
	return recs
}

func TestHeadline(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ms    []model
		extra func(*rand.Rand) []results.Record
		want  []string // independent of the golden file's exact text
	}{
		{"headline_clear", []model{fastRing, slowTree, slowPS}, nil,
			[]string{"**ring** is fastest at 4KiB–16MiB on 2 and 4 ranks", "The parameter server takes"}},
		{"headline_ties", []model{fastRing, sameTree, slowPS}, nil,
			[]string{"no difference between ring and tree at 4KiB–16MiB on 2 and 4 ranks"}},
		{"headline_training", []model{fastRing, sameTree, slowPS}, headlineTraining,
			[]string{"**Training lenet on mnist**, 2 ranks", "sooner than ps ps-sync", "no difference between ring ddp and tree ddp in training-step time",
				"find tree no faster than ring at any size", "test evaluations (the same work for every strategy) not counted"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyRun(t, regenerate(t, tt.name, headlineRun(tt.ms, tt.extra)))
			if err := Generate(dir); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			head := sectionOf(string(data), "## Headline")
			if head == "" {
				t.Fatalf("report has no headline:\n%s", data)
			}
			golden.Check(t, filepath.Join("testdata", tt.name+".md.golden"), []byte(head), *update)
			for _, w := range tt.want {
				if !strings.Contains(head, w) {
					t.Errorf("headline lacks %q:\n%s", w, head)
				}
			}
			// The headline comes first, and a plan's parts this machine
			// cannot run leave the run complete, and skipped here.
			if i := strings.Index(string(data), "## "); !strings.HasPrefix(string(data)[i:], "## Headline") {
				t.Errorf("the report does not open with its headline")
			}
			for _, w := range []string{"**Complete.**", "**Skipped here**", "strategy nccl cannot run here"} {
				if !strings.Contains(string(data), w) {
					t.Errorf("report lacks %q", w)
				}
			}
		})
	}
}

// sectionOf is markdown's section under heading, up to the next heading of
// the same level.
func sectionOf(md, heading string) string {
	i := strings.Index(md, heading+"\n")
	if i < 0 {
		return ""
	}
	rest := md[i+len(heading)+1:]
	if j := strings.Index(rest, "\n"+heading[:strings.Index(heading, " ")+1]); j >= 0 {
		rest = rest[:j+1]
	}
	return heading + "\n" + rest
}
