package plan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/golden"
	_ "github.com/distbench/distbench/strategies/all"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the plans expand to now")

// TestGolden expands every plan under testdata (and the embedded default
// plan, as default.golden) and compares what comes out, launches and
// points, or the one-line error, with its .golden file. Run with -update
// after a change meant to alter them, and read the diff.
func TestGolden(t *testing.T) {
	// Deterministic whatever this machine has: memory enough for every
	// plan here, and no dataset found (the plans name testdata/nodata).
	defer func(f func() (int64, string, bool)) { job.AvailableMemory = f }(job.AvailableMemory)
	job.AvailableMemory = func() (int64, string, bool) { return 64 << 30, "MemAvailable in /proc/meminfo", true }
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	plans, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{"default": DefaultYAML}
	for _, path := range plans {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cases[strings.TrimSuffix(filepath.Base(path), ".yaml")] = src
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			got := render(src)
			if isErr := strings.HasPrefix(got, "error: "); isErr != strings.HasPrefix(name, "error-") {
				t.Errorf("%s: refused %v, but only plans named error-* should be:\n%s", name, isErr, got)
			}
			if strings.HasPrefix(got, "error: ") && strings.Count(got, "\n") != 1 {
				t.Errorf("%s: the error is not one line:\n%s", name, got)
			}
			got = strings.ReplaceAll(got, cwd, ".") // absolute data directories
			golden.Check(t, filepath.Join("testdata", name+".golden"), []byte(got), *update)
		})
	}
}

// render writes what a plan expands to: its totals, notes, and each launch
// with its settings and points; or, for a plan that is refused, "error: "
// and the error, which must be one line. A peer's availability depends on
// what is installed here, so it is left out.
func render(src []byte) string {
	var b strings.Builder
	exp, err := expandSrc(src)
	if err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
		return b.String()
	}
	fmt.Fprintf(&b, "plan %q: %d points, %d launches, %d measurements, %d rounds\n",
		exp.Plan.Name, exp.NumPoints(), exp.NumLaunches(), exp.NumMeasurements(), exp.Rounds())
	for _, n := range exp.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, g := range exp.Groups {
		fmt.Fprintf(&b, "\nlaunch %s, %d rounds\n", g.Name(), g.Rounds)
		if g.Skip != "" && g.Peer == nil {
			fmt.Fprintf(&b, "  skip: %s\n", g.Skip)
		}
		if s := g.Spec; s != nil {
			fmt.Fprintf(&b, "  iters %d, warmup %d, check %v, timeout %v, time budget %v, keep samples %v\n",
				s.Iters, s.Warmup, s.Check, s.Timeout, s.TimeBudget, s.KeepSamples)
			if s.Train != nil {
				fmt.Fprintf(&b, "  train %+v\n", *s.Train)
			}
		}
		if p := g.Peer; p != nil {
			fmt.Fprintf(&b, "  peer job %+v\n", p.Job)
		}
		for _, p := range g.Points {
			fmt.Fprintf(&b, "  %s\n    %s\n", p.ID, p.Desc)
		}
	}
	return b.String()
}

func expandSrc(src []byte) (*Expanded, error) {
	p, err := Parse(src)
	if err != nil {
		return nil, err
	}
	return p.Expand()
}

// TestReadmeExample keeps the guide's plan example (docs/guide/sweep.md)
// the file the golden test expands: the guide shows testdata/example.yaml
// without its header comment.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "guide", "sweep.md"))
	if err != nil {
		t.Skipf("no docs/guide/sweep.md beside the module: %v", err)
	}
	example, err := os.ReadFile(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n**Plans.**")
	if !ok {
		t.Fatal(`docs/guide/sweep.md has no "**Plans.**" section`)
	}
	_, block, ok := strings.Cut(after, "```yaml\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatal("docs/guide/sweep.md's Plans section has no ```yaml block")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(string(example), "\n") {
		if !strings.HasPrefix(line, "#") {
			want.WriteString(line)
		}
	}
	if block != want.String() {
		t.Errorf("docs/guide/sweep.md's plan example differs from testdata/example.yaml (without its header):\n%s", golden.Diff(want.String(), block))
	}
}
