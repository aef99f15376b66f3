package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/costmodel"
	"github.com/distbench/distbench/internal/golden"
	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// TestModelPredictGolden pins predict's table: regenerate with
//
//	go test ./cmd/distbench -run ModelPredictGolden -update
func TestModelPredictGolden(t *testing.T) {
	code, out, errs := cli(t, "model", "predict", "--np", "4,16", "--sizes", "4KiB,1MiB", "--link", "10Gbit,25us",
		"--hosts", "4x4", "--algo", "ring,tree,ps,nccl/ring,ring/hier,tree/hier")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden.Check(t, filepath.Join("testdata", "model_predict.golden"), []byte(out), *update)
}

func TestModelPredictBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--np", "1"}, "accepted: world sizes ≥ 2"},
		{[]string{"--sizes", "4KB?"}, "accepted: sizes of at least 4B"},
		{[]string{"--algo", "ring,bogus"}, "accepted: nccl/ring"},
		{[]string{"--link", "fast"}, "want a rate and a latency"},
		{[]string{"--hosts", "4by8"}, "want HOSTSxRANKS_PER_HOST"},
		{[]string{"--np", "64", "--hosts", "2x8"}, "more ranks than --hosts 2x8 holds (16)"},
		{[]string{"--oversub", "0.5"}, "want ≥ 1"},
		{[]string{"--format", "csv"}, "accepted: table, json"},
		{[]string{"--calibration", "/nonexistent"}, "--calibration"},
		{[]string{"--slow-nic", "3"}, "want HOST=FACTOR"},
		{[]string{"--slow-rank", "x=2"}, "want RANK=FACTOR"},
	} {
		code, out, errs := cli(t, append([]string{"model", "predict"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q: want exit 2 and one line with %q", tc.args, code, errs, out, tc.want)
		}
	}
}

// writeModelRun writes a run whose ring times follow a known cost, in
// three rounds, so that calibration has something to find.
func writeModelRun(t *testing.T, dir string) {
	t.Helper()
	w, err := results.NewWriter(dir, results.Env{Host: "test", CPUModel: "test", Cores: 16, Commit: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	for _, np := range []int{2, 4, 8} {
		for _, b := range []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20} {
			// The segmented ring at 1Gbit,25us, α 30us: 2(n−1) steps.
			steps := float64(2 * (np - 1))
			us := steps*(30+25) + steps*float64(b)/float64(np)*8e-3
			for round := 1; round <= 3; round++ {
				r := &results.Record{Kind: results.KindCollective, Collective: "allreduce", Strategy: "ring", NP: np, Bytes: b,
					DType: "float32", Op: "sum", InPlace: true, Link: "1Gbit,25us", Round: round, Rounds: 3,
					TimeUs: us * (1 + 0.01*float64(round-2)), Iters: 4}
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestModelCalibrateValidateReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeModelRun(t, dir)
	code, out, errs := cli(t, "model", "calibrate", dir)
	if code != 0 {
		t.Fatalf("calibrate: exit %d: %s", code, errs)
	}
	for _, want := range []string{"1Gbit,25us", "ring", costmodel.CalibrationFile} {
		if !strings.Contains(out, want) {
			t.Errorf("calibrate output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, costmodel.CalibrationFile)); err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli(t, "model", "validate", dir, "--train", "np<=4")
	if code != 0 || !strings.Contains(out, "median |err| %") {
		t.Fatalf("validate: exit %d:\n%s%s", code, out, errs)
	}
	if code, _, errs := cli(t, "model", "validate", dir, "--train", "half"); code != 2 || !strings.Contains(errs, "accepted: np<=N") {
		t.Errorf("validate --train half: exit %d, %s", code, errs)
	}
	code, out, errs = cli(t, "model", "predict", "--np", "8,64", "--sizes", "1MiB", "--link", "1Gbit,25us", "--hosts", "64x1",
		"--algo", "ring", "--calibration", filepath.Join(dir, costmodel.CalibrationFile), "--plot", filepath.Join(dir, "pred.png"))
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	// np 8 is inside the calibrated range, np 64 outside.
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "ring" && (f[1] == "8") == strings.Contains(line, "*") {
			t.Errorf("extrapolation mark wrong: %q", line)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pred.png")); err != nil {
		t.Error(err)
	}
	// On another link than the one calibrated, and beside an algorithm
	// never calibrated: each says so, in the predictions and in the
	// winner table, and none says "calibrated on " with nothing after it.
	code, out, errs = cli(t, "model", "predict", "--np", "8", "--sizes", "1MiB", "--link", "100Gbit,2us", "--hosts", "8x1",
		"--algo", "ring,tree", "--calibration", filepath.Join(dir, costmodel.CalibrationFile))
	if code != 0 {
		t.Fatalf("predict on another link: exit %d: %s", code, errs)
	}
	for _, want := range []string{"calibrated on 1Gbit,25us", "# predicted winner", "! "} {
		if !strings.Contains(out, want) {
			t.Errorf("predict on another link lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "calibrated on \n") || strings.Contains(out, "calibrated on  ") {
		t.Errorf("predict says \"calibrated on\" with nothing after it:\n%s", out)
	}
	if err := reports.Generate(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Model and measurement") || !strings.Contains(string(md), "plots/model") {
		t.Errorf("report lacks the model overlay:\n%s", md)
	}
}
