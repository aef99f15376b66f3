package reports

import (
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/golden"
	"github.com/distbench/distbench/results"
)

var update = flag.Bool("update", false, "rewrite testdata: the synthetic runs and the golden reports")

// copyRun copies a run directory's results.jsonl into a fresh directory, so
// that tests never write into testdata.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(src, results.FileName))
	if err != nil {
		t.Fatalf("%v (run the tests with -update to create testdata)", err)
	}
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// regenerate rewrites testdata/NAME/results.jsonl from gen under -update.
func regenerate(t *testing.T, name string, gen func(testing.TB, string)) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	if *update {
		tmp := filepath.Join(t.TempDir(), name)
		gen(t, tmp)
		data, err := os.ReadFile(filepath.Join(tmp, results.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, results.FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// TestGenerate makes the report of the synthetic run once (plots are slow
// under -race) and checks it three ways: against the golden file, for the
// statements a reader must find in it, and for its images.
func TestGenerate(t *testing.T) {
	dir := copyRun(t, regenerate(t, "run", writeSynthRun))
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("golden", func(t *testing.T) {
		golden.Check(t, filepath.Join("testdata", "report.md.golden"), got, *update)
	})
	t.Run("content", func(t *testing.T) {
		// Independent of the golden file's exact text.
		for _, want := range []string{
			"**Incomplete.**",
			"the run did not finish",
			"the last record was cut short",
			"1 point(s) failed",
			"1 point(s) stopped short",
			"1 point(s) computed wrong results",
			"2 planned point(s) have no result",
			`rank 5 (127.0.0.1:41234) closed the connection \| after 3.2s`, // escaped pipe
			"3 wrong element(s)",
			"Synthetic CPU @ 3.00GHz, 16 cores",
			"## allreduce (float32, sum, in-place)",
			"## allgather (float32, out-of-place)",
			"### Winner map",
			"mpi (peer) busbw (GB/s)",
			"### Bytes on the wire vs message size",
			"tree busiest (B)",
			"## Training",
			"### lenet on mnist",
			"comm hidden",
			"reached 85% test accuracy in 1.42 s of training steps",
			"#### Time to 85% test accuracy",
			"(95% CIs within",
			"## Per-rank times",
			"Slowest rank beyond the noise: rank 2 on host node2 (pid 1002) in 1 of 10 point(s)",
			"**1.67 slowest**",
			// The cluster-scale section, calibrated on the run, its error beside it.
			"## Beyond this machine",
			"its held-out median |error|, fitted on the 2 and 4-rank points, predicting the 8-rank ones: ring",
			"### On 400Gbit,1us NICs",
			"**[Beyond this machine](#beyond-this-machine)**, as the cost model predicts it",
		} {
			if !strings.Contains(string(got), want) {
				t.Errorf("report lacks %q", want)
			}
		}
	})
	t.Run("images", func(t *testing.T) {
		checkImages(t, dir, got)
	})
}

var imgLink = regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`)

// checkImages checks that every plot the markdown links exists, decodes as a
// PNG of a sensible size and is not blank, and that no plot is left unlinked.
func checkImages(t *testing.T, dir string, markdown []byte) {
	t.Helper()
	var linked []string
	for _, m := range imgLink.FindAllSubmatch(markdown, -1) {
		linked = append(linked, string(m[1]))
	}
	if len(linked) == 0 {
		t.Fatal("the report links no plots")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "plots", "*.png"))
	var onDisk []string
	for _, f := range files {
		onDisk = append(onDisk, "plots/"+filepath.Base(f))
	}
	slices.Sort(linked)
	slices.Sort(onDisk)
	if !slices.Equal(linked, onDisk) {
		t.Errorf("linked plots %v\ndiffer from plots on disk %v", linked, onDisk)
	}
	for _, rel := range linked {
		checkPNG(t, filepath.Join(dir, filepath.FromSlash(rel)))
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	img, err := png.Decode(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	b := img.Bounds()
	if b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("%s: %dx%d pixels, too small to read", filepath.Base(path), b.Dx(), b.Dy())
	}
	if st.Size() < 8<<10 {
		t.Errorf("%s: %d bytes, too small to hold a plot", filepath.Base(path), st.Size())
	}
	if n := distinctColors(img, 64); n < 8 {
		t.Errorf("%s: %d distinct colours, a blank or near-blank image", filepath.Base(path), n)
	}
}

// distinctColors counts colours up to limit.
func distinctColors(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"no results", "", "no such file"},
		{"newer schema", `{"schema":7,"kind":"env","env":{}}` + "\n", "schema 7 is newer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.content != "" {
				os.WriteFile(filepath.Join(dir, results.FileName), []byte(tt.content), 0o644)
			}
			err := Generate(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Generate: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestGenerateEmptyRun: a run interrupted before its first point still gets
// a report that says so.
func TestGenerateEmptyRun(t *testing.T) {
	dir := t.TempDir()
	w, err := results.NewWriter(dir, synthEnv)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(data), "**Incomplete.** 0 collective points measured") {
		t.Errorf("report of an empty run:\n%s", data)
	}
}

func TestWinnerText(t *testing.T) {
	tests := []struct {
		w    winner
		want string
	}{
		{winner{best: "ring", runner: "tree", margin: 0.25}, "ring +25.0%"},
		{winner{best: "tree", runner: "ring", margin: 0.02, overlap: true}, "tie: ring ≈ tree"},
		{winner{best: "ring", runner: "tree", margin: 0.02, overlap: true}, "tie: ring ≈ tree"},
		{winner{best: "ps"}, "ps (only)"},
	}
	for _, tt := range tests {
		if got := tt.w.text(); got != tt.want {
			t.Errorf("%+v: text() = %q, want %q", tt.w, got, tt.want)
		}
	}
}

// TestGenerateLeftOut: a finished run whose plan left parts out because
// the machine cannot run them (skip_unavailable) is complete, with those
// parts "skipped here", each named with its fix: "Incomplete" is kept for
// points that failed or were interrupted.
func TestGenerateLeftOut(t *testing.T) {
	dir := t.TempDir()
	env := synthEnv
	env.LeftOut = []string{"training[0]: dataset mnist not found in ./data/mnist (run 'make data', or set data_dir)"}
	w, err := results.NewWriter(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&results.Record{Kind: results.KindCollective, Point: "allreduce/ring/np=2/bytes=1024",
		Collective: "allreduce", Strategy: "ring", NP: 2, Bytes: 1024, DType: "float32", TimeUs: 12, SamplesUs: []float64{12, 11, 13}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	for _, want := range []string{"**Complete.**", "**Skipped here**", "- training[0]: dataset mnist not found", "run 'make data'"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "Incomplete") {
		t.Errorf("a run with parts skipped here is called incomplete:\n%s", data)
	}
}

func TestOversubscribed(t *testing.T) {
	recs := []results.Record{{NP: 8}, {NP: 2}, {NP: 4}, {NP: 8}, {NP: 3}}
	tests := []struct {
		cores int
		want  []string
	}{
		{2, []string{"3", "4", "8"}},
		{4, []string{"8"}},
		{8, []string{}},
		{0, nil}, // cores unknown: say nothing
	}
	for _, tt := range tests {
		if got := oversubscribed(recs, tt.cores); !slices.Equal(got, tt.want) {
			t.Errorf("oversubscribed(cores %d) = %q, want %q", tt.cores, got, tt.want)
		}
	}
}
