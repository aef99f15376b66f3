package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// cli runs the CLI in-process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), &out, &errb, args)
	return code, out.String(), errb.String()
}

func TestSweepCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := cli(t, "sweep", "--out", dir, "--strategy", "ring", "--np", "2", "--sizes", "4KiB,8KiB", "--iters", "3", "--warmup", "1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"[1/2] allreduce ring np=2 4KiB float32: ",
		"[2/2] allreduce ring np=2 8KiB float32: ",
		"report: " + filepath.Join(dir, reports.ReportFile),
		"2 of 2 points measured",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Complete() || len(run.Records) != 2 {
		t.Errorf("complete %v, %d records", run.Complete(), len(run.Records))
	}
	if len(run.Env.Planned) != 2 {
		t.Errorf("env %+v", run.Env)
	}

	// Resuming reads the plan back from the run directory.
	code, out, errs = cli(t, "sweep", "--resume", dir, "--no-report")
	if code != 0 || !strings.Contains(out, "2 of 2 points measured (2 by an earlier session)") {
		t.Errorf("resume: exit %d\n%s%s", code, out, errs)
	}
	// A run directory is not written over.
	if code, _, errs = cli(t, "sweep", "--out", dir); code != 2 || !strings.Contains(errs, "--resume") {
		t.Errorf("--out over a run: exit %d, %q", code, errs)
	}
	code, out, _ = cli(t, "report", dir)
	if code != 0 || strings.TrimSpace(out) != filepath.Join(dir, reports.ReportFile) {
		t.Errorf("report: exit %d, %q", code, out)
	}
}

// TestSweepRoundsCLI: --rounds measures every point in interleaved rounds,
// says which round it is on, and reports each point once.
func TestSweepRoundsCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := cli(t, "sweep", "--out", dir, "--strategy", "ring", "--np", "2", "--sizes", "4KiB", "--iters", "6", "--warmup", "1", "--rounds", "2")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"1 point in 2 launches (2 rounds)",
		"round 1 of 2\n[1/2] allreduce ring np=2 4KiB float32 (round 1/2): ",
		"round 2 of 2\n[2/2] allreduce ring np=2 4KiB float32 (round 2/2): ",
		"1 of 1 points measured in 2 rounds",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Complete() || len(run.Records) != 2 || run.Records[1].Round != 2 || run.Records[1].Iters != 3 {
		t.Errorf("complete %v, records %+v", run.Complete(), run.Records)
	}
	report, _ := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if !strings.Contains(string(report), "**Complete.** 1 collective points measured in 2 rounds each (pooled)") {
		t.Errorf("report:\n%s", report)
	}
	// A resumed sweep keeps its rounds.
	if code, _, errs = cli(t, "sweep", "--resume", dir, "--rounds", "3"); code != 2 || !strings.Contains(errs, "no --rounds") {
		t.Errorf("--resume --rounds: exit %d, %q", code, errs)
	}
	code, out, errs = cli(t, "sweep", "--resume", dir, "--no-report")
	if code != 0 || !strings.Contains(out, "1 of 1 points measured in 2 rounds (1 by an earlier session)") {
		t.Errorf("resume: exit %d\n%s%s", code, out, errs)
	}
}

func TestSweepSkippedExitsOne(t *testing.T) {
	// What a plan names but this machine lacks (here a dataset) is
	// recorded as skipped, and the exit status says the sweep is short.
	dir := filepath.Join(t.TempDir(), "run")
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(plan, []byte(`
iters: 3
warmup: 0
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB]
training:
  - model: lenet
    dataset: mnist
    data_dir: /nonexistent/mnist
    strategies: [ring]
    np: [2]
    steps: 5
`), 0o644)
	code, out, errs := cli(t, "sweep", "--plan", plan, "--out", dir, "--no-report")
	if code != 1 || !strings.Contains(out, "skipped: dataset mnist not found") || !strings.Contains(out, "1 of 2 points measured, 1 skipped") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	// --skip-unavailable leaves it out instead.
	code, out, errs = cli(t, "sweep", "--plan", plan, "--out", dir+"2", "--no-report", "--skip-unavailable")
	if code != 0 || !strings.Contains(errs, "skipped: training[0]: dataset mnist not found") || !strings.Contains(out, "1 of 1 points measured") {
		t.Errorf("--skip-unavailable: exit %d\n%s%s", code, out, errs)
	}
	// ... and records what it left out, for the report to say.
	run, err := results.ReadRun(dir + "2")
	if err != nil {
		t.Fatal(err)
	}
	if left := run.LeftOut(); len(left) != 1 || !strings.Contains(left[0], "dataset mnist not found") {
		t.Errorf("LeftOut() = %q, want the dataset", left)
	}
}

func TestSweepDryRun(t *testing.T) {
	code, out, errs := cli(t, "sweep", "--dry-run")
	if code != 0 || !strings.Contains(out, `plan "default"`) || !strings.Contains(out, "launch ring np=2") ||
		!strings.Contains(out, "(6 rounds); iters 24, warmup 2") || !strings.Contains(out, "6 rounds of 4+4+4+4+4+4 iterations") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	// --rounds overrides the plan's.
	if code, out, _ = cli(t, "sweep", "--dry-run", "--rounds", "1"); code != 0 || strings.Contains(out, "rounds") {
		t.Errorf("--rounds 1: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "sweep", "--dry-run", "--strategy", "ring", "--np", "2,3", "-b", "1K", "-e", "4K", "-f", "2",
		"--link", "", "--link", "10Gbit,25us", "--iters", "9", "--time-budget", "1s", "--inplace", "both")
	if code != 0 || !strings.Contains(out, "24 points in 4 launches; iters 9") || !strings.Contains(out, "launch ring np=3 link=10Gbit,25us") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestSweepBadInput(t *testing.T) {
	// --launcher env checks the job's secret first; these cases are about
	// what follows.
	k, v, _ := strings.Cut(testTokenEnv, "=")
	t.Setenv(k, v)
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.yaml")
	os.WriteFile(bad, []byte("collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4K]\n    dtypes: [float32]\n    colective: [allgather]\n"), 0o644)
	badRounds := filepath.Join(tmp, "rounds.yaml")
	os.WriteFile(badRounds, []byte("rounds: 0\ncollectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4K]\n"), 0o644)
	const block = "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4K]\n"
	zeroTimeout := filepath.Join(tmp, "timeout.yaml")
	os.WriteFile(zeroTimeout, []byte("timeout: 0s\n"+block), 0o644)
	twoDocs := filepath.Join(tmp, "two.yaml")
	os.WriteFile(twoDocs, []byte(block+"---\nbogus: 1\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--plan", bad}, `unknown key "colective"`},
		{[]string{"--plan", filepath.Join(tmp, "none.yaml")}, "--plan"},
		{[]string{"--plan", bad, "--np", "2"}, "not both"},
		{[]string{"--strategy", "rnig"}, `unknown strategy "rnig"`},
		{[]string{"--dtype", "float33"}, "float33"},
		{[]string{"--link", "fast"}, `link "fast"`},
		{[]string{"--sizes", "4Q"}, "4Q"},
		{[]string{"--np", "0"}, "np 0"},
		{[]string{"--opt", "chunk"}, "key=value"},
		{[]string{"--peers", "nccl-tests"}, "nccl-tests"},
		{[]string{"--resume", filepath.Join(tmp, "nope")}, "no results.jsonl there"},
		{[]string{"--resume", tmp, "--out", tmp}, "--out"},
		{[]string{"--iters", "-1"}, "iters"},
		{[]string{"--rounds", "0"}, "--rounds 0: want an integer from 1 to 100"},
		{[]string{"--rounds", "101"}, "--rounds 101"},
		{[]string{"--rounds", "two"}, "--rounds"},
		{[]string{"--plan", badRounds}, `rounds "0": want an integer from 1 to 100`},
		{[]string{"--bogus"}, "unknown flag"},
		{[]string{"--plan", zeroTimeout}, "line 1: plan: timeout 0s: must be positive (accepted: a positive value, or leave timeout out for the default, 2m)"},
		{[]string{"--plan", twoDocs}, "line 6: plan: a second YAML document (accepted: one document;"},
		{[]string{"--timeout", "1ns"}, "--timeout 1ns: too short (accepted: 1s or more)"},
		{[]string{"--iters", "0"}, "--iters 0: must be at least 1"},
		{[]string{"--strategy", "ring", "-b", "4", "-e", "1G", "-f", "NaN"}, "--stepfactor NaN: want a finite number greater than 1"},
		{[]string{"--strategy", "ring", "-b", "4", "-e", "1G", "-f", "1.0000001"}, "more than 4096 sizes from 4 to 1073741824 bytes"},
		{[]string{"--strategy", "ps", "--np", "1", "--opt", "placement=dedicated", "--opt", "servers=520"}, "np 1 and 520 dedicated servers: 521 processes, but at most 512"},
		{[]string{"--strategy", "ring", "--np", "2", "--hosts", "2x2"}, `hosts "2x2" lays out 4 ranks, but np is [2]`},
		{[]string{"--strategy", "ring", "--np", "2,4", "--hosts", "2x2"}, `np 2 has no hosts layout (add "" to hosts`},
		{[]string{"--strategy", "ring", "--np", "4", "--hosts", "2y2"}, `hosts "2y2": want HOSTSxRANKS (2x2) or the ranks of each host (3,1)`},
		{[]string{"--strategy", "ring", "--np", "4", "--hosts", "2x2", "--launcher", "env"}, "hosts 2x2: only the local launcher simulates hosts"},
	}
	for _, tt := range tests {
		code, out, errs := cli(t, append([]string{"sweep", "--dry-run"}, tt.args...)...)
		if code != 2 || !strings.Contains(errs, tt.want) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stderr %q (want one line containing %q), stdout %q", tt.args, code, errs, tt.want, out)
		}
	}
}

// TestSweepMemory: --dry-run flags a point whose buffers cannot fit here,
// as the sweep itself refuses it before launching anything.
func TestSweepMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the memory check reads /proc/meminfo")
	}
	for _, args := range [][]string{{"--dry-run"}, {"--out", filepath.Join(t.TempDir(), "run")}} {
		code, out, errs := cli(t, append([]string{"sweep", "--strategy", "ring", "--np", "2,4", "--sizes", "4KiB,1PiB"}, args...)...)
		want := "distbench: ring np=2: allreduce of 1PiB float32 in-place needs at least 2PiB of memory here (2 ranks × 1PiB of buffers)"
		if code != 2 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and one line starting %q", args, code, errs, out, want)
		}
	}
}

func TestReportBadInput(t *testing.T) {
	tmp := t.TempDir()
	// A damaged results file: report and compare agree that it is bad
	// input.
	torn := t.TempDir()
	if err := os.WriteFile(filepath.Join(torn, "results.jsonl"), []byte("garbage\n{\"kind\":\"collective\",\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"report"}, {"report", filepath.Join(tmp, "nope")}, {"report", tmp}, {"report", torn}, {"compare", torn, torn}} {
		if code, _, errs := cli(t, args...); code != 2 || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// TestSweepHosts: --hosts lays each launch's ranks out on simulated hosts,
// as run --hosts: each layout is a launch at the np it lays out (” is
// none), and every record and point id says which.
func TestSweepHosts(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		layouts []string // the launches' layouts, in order; "" none
	}{
		{"one layout", []string{"--np", "4", "--hosts", "2x2"}, []string{"2x2"}},
		{"layouts and none", []string{"--np", "2,4", "--hosts", "", "--hosts", "2x2", "--hosts", "3,1"}, []string{"", "", "2x2", "3,1"}},
		{"none given", []string{"--np", "4"}, []string{""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"sweep", "--out", dir, "--no-report", "--strategy", "ring", "--opt", "algo=hier", "--transport", "auto",
				"--sizes", "4KiB", "--iters", "2", "--warmup", "1"}, tc.args...)
			code, out, errs := cli(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			run, err := results.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range run.Records {
				if r.Kind != results.KindCollective {
					continue
				}
				got = append(got, r.Hosts)
				if want := "/hosts=" + r.Hosts; r.Hosts != "" && !strings.Contains(r.Point, want) {
					t.Errorf("point %s lacks %s", r.Point, want)
				}
				if r.Wrong != 0 || r.Error != "" {
					t.Errorf("point %s: %d wrong, error %q", r.Point, r.Wrong, r.Error)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.layouts, "|") {
				t.Errorf("records' hosts %q, want %q", got, tc.layouts)
			}
		})
	}
}
