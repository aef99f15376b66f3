package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// TestABCLI runs ab with this test binary as both builds (it is its own
// worker, see TestMain). The verdicts are the statistics' (reports'
// TestPairedCompare); a threshold no noise reaches keeps this run's exit
// status from depending on the machine's load, and --max-gate 0% keeps a
// loaded machine's points from being called too noisy.
func TestABCLI(t *testing.T) {
	exe := os.Args[0]
	dir := filepath.Join(t.TempDir(), "ab")
	code, out, errs := cli(t, "ab", exe, exe, "--out", dir, "--strategy", "ring", "--np", "2", "--sizes", "4KiB,8KiB",
		"--iters", "18", "--warmup", "1", "--rounds", "6", "--threshold", "0.99", "--max-gate", "0%")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"distbench ab: 2 points × 2 builds in 24 launches (6 rounds) into " + dir,
		"[24/24] ",
		"## distbench ab: " + filepath.Join(dir, "base") + " → " + filepath.Join(dir, "new"),
		"**No regressions**",
		"### Size bands",
		"allreduce ring np=2 float32 sum < 64KiB (2 points)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, b := range []string{"base", "new"} {
		run, err := results.ReadRun(filepath.Join(dir, b))
		if err != nil {
			t.Fatal(err)
		}
		if !run.Complete() || len(run.Records) != 12 || run.Env.Exe != exe {
			t.Errorf("%s: complete %v, %d records (want 12), exe %q", b, run.Complete(), len(run.Records), run.Env.Exe)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.CompareFile))
	if err != nil || !strings.Contains(string(md), "## Size bands") || !strings.Contains(string(md), "| pairs |") {
		t.Errorf("compare.md (%v):\n%s", err, md)
	}
	// The two runs can be judged again, paired, with other options.
	code, out, errs = cli(t, "compare", "--paired", filepath.Join(dir, "base"), filepath.Join(dir, "new"), "--threshold", "0.99", "--max-gate", "0%", "--out", t.TempDir())
	if code != 0 || !strings.Contains(out, "## distbench ab:") {
		t.Errorf("compare --paired: exit %d\n%s%s", code, out, errs)
	}
}

func TestABBadInput(t *testing.T) {
	exe := os.Args[0]
	missing := filepath.Join(t.TempDir(), "nope")
	trainOnly := filepath.Join(t.TempDir(), "train.yaml")
	if err := os.WriteFile(trainOnly, []byte("training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing binary", []string{"ab", missing, exe}, "BASE_BIN " + missing},
		{"not executable", []string{"ab", exe, trainOnly}, "not an executable file"},
		{"one binary", []string{"ab", exe}, "accepts 2 arg(s)"},
		{"too few rounds", []string{"ab", exe, exe, "--rounds", "3"}, "--rounds 3: ab needs at least 6"},
		{"training only", []string{"ab", exe, exe, "--plan", trainOnly}, "no collective points"},
		{"bad threshold", []string{"ab", exe, exe, "--threshold", "5"}, "--threshold 5"},
		{"bad pair", []string{"ab", exe, exe, "--pair", "round"}, `--pair "round": want point or launch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, append(tc.args, "--out", filepath.Join(t.TempDir(), "x"))...)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 1 {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, tc.want)
			}
		})
	}
}
