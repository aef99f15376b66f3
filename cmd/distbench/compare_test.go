package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// writeRun makes a synthetic run directory: two allreduce points whose
// samples centre on us[i] microseconds, within ±1%.
func writeRun(t *testing.T, dir string, us ...float64) {
	t.Helper()
	writeNoisyRun(t, dir, 0.01, us...)
}

// writeNoisyRun is writeRun with samples spread ±spread around the centre.
func writeNoisyRun(t *testing.T, dir string, spread float64, us ...float64) {
	t.Helper()
	w, err := results.NewWriter(dir, results.Env{Host: "test", CPUModel: "test", Cores: 2, Commit: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	for i, center := range us {
		var samples []float64
		for k := range 12 {
			samples = append(samples, center*(1+spread*float64(k%4-2)/2))
		}
		r := &results.Record{
			Kind: results.KindCollective, Point: "allreduce/ring/np=2/bytes=" + []string{"4096", "65536"}[i],
			Collective: "allreduce", Strategy: "ring", NP: 2, Bytes: []int64{4096, 65536}[i], DType: "float32", Op: "sum",
			Root: -1, InPlace: true, TimeUs: center, SamplesUs: samples, Iters: len(samples),
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestCompareCLI(t *testing.T) {
	tmp := t.TempDir()
	base, same, slow, fast := filepath.Join(tmp, "base"), filepath.Join(tmp, "same"), filepath.Join(tmp, "slow"), filepath.Join(tmp, "fast")
	writeRun(t, base, 100, 1000)
	writeRun(t, same, 101, 995)
	writeRun(t, slow, 100, 1500)
	writeRun(t, fast, 50, 1000)

	// By default compare writes into a directory of its own under runs/,
	// never into the runs it reads (a CI artefact may be read-only).
	t.Chdir(tmp)
	code, out, errs := cli(t, "compare", base, same)
	if code != 0 || !strings.Contains(out, "**No regressions**") || !strings.Contains(out, filepath.Join("runs", "compare-")) {
		t.Errorf("same: exit %d\n%s%s", code, out, errs)
	}
	for _, run := range []string{base, same} {
		for _, f := range []string{reports.CompareFile, reports.VerdictFile} {
			if _, err := os.Stat(filepath.Join(run, f)); err == nil {
				t.Errorf("compare wrote %s into the run %s it reads", f, run)
			}
		}
	}
	if m, _ := filepath.Glob(filepath.Join("runs", "compare-*", reports.VerdictFile)); len(m) != 1 {
		t.Errorf("verdict.json under runs/compare-*: %v, want one", m)
	}

	code, out, errs = cli(t, "compare", base, slow)
	if code != 1 || !strings.Contains(out, "**1 regression(s)**") || !strings.Contains(out, "### Regressions") || !strings.Contains(out, "bytes=64KiB") {
		t.Errorf("slow: exit %d\n%s%s", code, out, errs)
	}
	// A threshold above the change lets it pass.
	if code, out, _ = cli(t, "compare", base, slow, "--threshold", "60%"); code != 0 {
		t.Errorf("slow, threshold 60%%: exit %d\n%s", code, out)
	}
	if code, out, _ = cli(t, "compare", base, slow, "--threshold", "0.6"); code != 0 {
		t.Errorf("slow, threshold 0.6: exit %d\n%s", code, out)
	}

	out2 := filepath.Join(tmp, "cmp")
	code, out, _ = cli(t, "compare", base, fast, "--out", out2)
	if code != 0 || !strings.Contains(out, "### Improvements") {
		t.Errorf("fast: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(out2, reports.CompareFile)); err != nil {
		t.Errorf("--out: %v", err)
	}
	// The verdict for machines says what the exit status says.
	for _, tt := range []struct {
		run     string
		code    int
		outcome string
	}{{fast, 0, reports.OutcomePass}, {slow, 1, reports.OutcomeRegression}} {
		dir := filepath.Join(tmp, "verdict-"+filepath.Base(tt.run))
		if code, _, _ := cli(t, "compare", base, tt.run, "--out", dir); code != tt.code {
			t.Errorf("%s: exit %d, want %d", tt.run, code, tt.code)
		}
		b, err := os.ReadFile(filepath.Join(dir, reports.VerdictFile))
		var doc reports.VerdictDoc
		if err == nil {
			err = json.Unmarshal(b, &doc)
		}
		if err != nil || doc.Outcome != tt.outcome || doc.ExitCode != tt.code || doc.Base.Dir != base || doc.New.Dir != tt.run {
			t.Errorf("%s: verdict.json %+v (%v), want outcome %s, exit %d", tt.run, doc, err, tt.outcome, tt.code)
		}
	}
}

// writeRoundsRun makes a synthetic run in three rounds: one allreduce point
// whose samples in round k centre on us[k] microseconds.
func writeRoundsRun(t *testing.T, dir string, us ...float64) {
	t.Helper()
	w, err := results.NewWriter(dir, results.Env{Host: "test", CPUModel: "test", Cores: 2, Commit: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	for k, center := range us {
		r := &results.Record{
			Kind: results.KindCollective, Point: "allreduce/ring/np=2/bytes=65536", Collective: "allreduce", Strategy: "ring",
			NP: 2, Bytes: 65536, DType: "float32", Op: "sum", Root: -1, InPlace: true, Round: k + 1, Rounds: len(us),
		}
		var samples []float64
		for i := range 7 {
			samples = append(samples, center*(1+float64(i%4-2)/200)) // ±1%
		}
		if err := results.Fill(r, samples); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestCompareRoundsCLI(t *testing.T) {
	t.Chdir(t.TempDir()) // compare writes runs/compare-<time> here
	tmp := t.TempDir()
	base, burst, slow := filepath.Join(tmp, "base"), filepath.Join(tmp, "burst"), filepath.Join(tmp, "slow")
	writeRoundsRun(t, base, 1000, 1002, 998)
	writeRoundsRun(t, burst, 1001, 5000, 999) // a burst of load in round 2
	writeRoundsRun(t, slow, 1500, 1490, 1510)
	if code, out, errs := cli(t, "compare", base, burst); code != 0 || !strings.Contains(out, "**No regressions**") {
		t.Errorf("one slow round: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := cli(t, "compare", base, slow)
	if code != 1 || !strings.Contains(out, "| p | rounds |") || !strings.Contains(out, "| 3+3: +50.0% |") {
		t.Errorf("slow in every round: exit %d\n%s%s", code, out, errs)
	}
}

// TestCompareTooNoisy: two runs so noisy that their gates (about 100%)
// would hide a 2× slowdown are not "no regressions, exit 0": compare says
// what it cannot see and exits 3, unless --max-gate allows that gate.
func TestCompareTooNoisy(t *testing.T) {
	t.Chdir(t.TempDir()) // compare writes runs/compare-<time> here
	tmp := t.TempDir()
	base, nw := filepath.Join(tmp, "base"), filepath.Join(tmp, "new")
	writeNoisyRun(t, base, 0.4, 100, 1000)
	writeNoisyRun(t, nw, 0.4, 100, 1000)
	code, out, errs := cli(t, "compare", base, nw)
	if code != 3 || !strings.Contains(out, "2 too noisy to judge") || !strings.Contains(out, "**Too noisy to judge 2 of 2 points**") ||
		!strings.Contains(out, "above the 25.0% this comparison must see (--max-gate)") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	for _, gate := range []string{"0%", "500%"} {
		if code, out, _ := cli(t, "compare", base, nw, "--max-gate", gate); code != 0 || strings.Contains(out, "Too noisy") {
			t.Errorf("--max-gate %s: exit %d\n%s", gate, code, out)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base")
	writeRun(t, base, 100, 1000)
	tests := [][]string{
		{"compare", base},
		{"compare", base, filepath.Join(tmp, "missing")},
		{"compare", filepath.Join(tmp, "missing"), base},
		{"compare", base, tmp}, // a directory without results
		{"compare", base, base, "--threshold", "5"},
		{"compare", base, base, "--threshold", "lots"},
		{"compare", base, base, "--threshold", "-1%"},
		{"compare", base, base, "--alpha", "1.5"},
		{"compare", base, base, "--max-gate", "lots"},
	}
	for _, args := range tests {
		code, _, errs := cli(t, args...)
		if code != 2 || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args[1:], code, errs)
		}
	}
}

func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]float64{"5%": 0.05, "0.05": 0.05, "0": 0, "12.5%": 0.125, "1": 1, "150%": 1.5} {
		got, err := parseThreshold(in)
		if err != nil || got != want {
			t.Errorf("parseThreshold(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
