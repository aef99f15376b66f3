package harness

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/train"
)

const abPlan = `
iters: 6
warmup: 1
timeout: 20s
rounds: 2
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB, 16KiB]
`

// TestAB runs both "builds" (this test binary twice) interleaved and
// checks what each run directory got, and the order the launches ran in.
func TestAB(t *testing.T) {
	for _, perPoint := range []bool{false, true} {
		name := "per launch"
		if perPoint {
			name = "per point"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			so := sweepOpts(t, dir, abPlan)
			var out bytes.Buffer
			o := ABOptions{Plan: so.Plan, Dir: dir, Env: results.CaptureEnv(), Stderr: so.Stderr, Grace: so.Grace,
				Base: ABBuild{Name: "base", Exe: os.Args[0]}, New: ABBuild{Name: "new", Exe: os.Args[0]},
				Progress: &logProgress{out: &out}, PerPoint: perPoint}
			res, err := AB(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || res.Base.Measured != 2 || res.New.Measured != 2 {
				t.Fatalf("result %+v", res)
			}
			var started [2][]string
			for k, b := range []string{"base", "new"} {
				run, err := results.ReadRun(filepath.Join(dir, b))
				if err != nil {
					t.Fatal(err)
				}
				if !run.Complete() || len(run.Records) != 4 {
					t.Fatalf("%s: complete %v, %d records, want 4 (2 points × 2 rounds)", b, run.Complete(), len(run.Records))
				}
				if run.Env.Exe != os.Args[0] || run.Env.Commit == "" {
					t.Errorf("%s: env exe %q commit %q", b, run.Env.Exe, run.Env.Commit)
				}
				for _, r := range run.Records {
					started[k] = append(started[k], r.StartedAt.Format("15:04:05.000000000"))
				}
			}
			// Interleaved: each base round ran next to its new round, not
			// one build's sweep after the other's.
			if !(started[0][0] < started[1][3] && started[1][0] < started[0][3]) {
				t.Errorf("not interleaved: base %v, new %v", started[0], started[1])
			}
			lines := out.String()
			for _, s := range []string{"base: allreduce ring np=2 4KiB float32 (round 1/2)", "new: allreduce ring np=2 16KiB float32 (round 2/2)", "[8/8] "} {
				if !strings.Contains(lines, s) {
					t.Errorf("progress lacks %q:\n%s", s, lines)
				}
			}
			// ABBA: the build that goes first alternates.
			var firsts []string
			for _, l := range strings.Split(lines, "\n") {
				if strings.Contains(l, "4KiB") {
					firsts = append(firsts, strings.Fields(l)[1])
				}
			}
			if perPoint && !slices.Equal(firsts, []string{"base:", "new:", "base:", "new:"}) && !slices.Equal(firsts, []string{"base:", "new:", "new:", "base:"}) {
				t.Errorf("4KiB measured in the order %v", firsts)
			}
		})
	}
}

func TestABBadOptions(t *testing.T) {
	so := sweepOpts(t, t.TempDir(), tinyPlan)
	o := ABOptions{Plan: so.Plan, Dir: t.TempDir(), Base: ABBuild{Name: "x", Exe: os.Args[0]}, New: ABBuild{Name: "x", Exe: os.Args[0]}}
	if _, err := AB(context.Background(), o); err == nil || !strings.Contains(err.Error(), "distinct names") {
		t.Errorf("same names: %v", err)
	}
	o.New.Name = "y"
	spec := *so.Plan.Groups[0].Spec
	spec.Train = &train.Config{}
	so.Plan.Groups[0].Spec = &spec
	if _, err := AB(context.Background(), o); err == nil || !strings.Contains(err.Error(), "only collective groups") {
		t.Errorf("a training group: %v", err)
	}
}
