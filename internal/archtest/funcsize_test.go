package archtest

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The most lines (from func to its closing brace) and the most cyclomatic
// complexity (1 + each if, for, case, && and ||) a function may have: past
// them it holds more than one idea, or a chain of cases that a table would
// say better.
const (
	maxFuncLines      = 80
	maxFuncComplexity = 25
)

// longFuncs are the functions allowed past the limits, each with its size
// today as a ceiling (it may shrink, not grow) and why. A function is split
// where that makes its ideas clearer, not to pass: the parsers and
// validators below are one case per key or field, which reads best as one
// switch. The others were over when the limits came (issue 35) and are
// to be split by idea; the ceiling keeps them from growing meanwhile. A
// name is file:Func or file:Recv.Method.
var longFuncs = map[string]struct {
	lines, complexity int
	why               string
}{
	// One case per key or field: a table in the form of a switch.
	"costmodel/algorithms.go:ForRecord":       {28, 26, "one case per strategy option the model knows"},
	"strategies/ps/options.go:parseOptions":   {64, 33, "one case per ps option, each checked with its accepted values"},
	"internal/rendezvous/url.go:ParseURL":     {58, 28, "one case per scheme and query parameter of env://, tcp://, file://"},
	"workloads/nn/schedule.go:ParseSchedule":  {77, 29, "one case per learning-rate schedule and its parameters"},
	"harness/job/spec.go:Spec.Validate":       {92, 32, "one check per field of a spec, each with its own message"},
	"internal/cuda/find.go:Finder.Candidates": {78, 27, "one case per place a CUDA library is looked for, in order"},

	// Over when the limits came: to be split by idea.
	"cmd/distbench/ab.go:runAB":                           {103, 27, "to split: flags to a plan, then the A/B run and its verdict"},
	"cmd/distbench/osu.go:osuFlags.spec":                  {82, 27, "to split (issue 34b's area): OSU's flags to a spec"},
	"cmd/distbench/run.go:newRunCmdFlags":                 {134, 13, "to split (issue 34b's area): flag registration by group"},
	"cmd/distbench/run.go:newRunCmd":                      {117, 12, "to split: flag registration by group"},
	"cmd/distbench/train.go:newTrainCmd":                  {187, 35, "to split: flags, the spec, the launch"},
	"costmodel/hier.go:hierBuilder.sub":                   {91, 20, "to split: one schedule phase per function"},
	"costmodel/hier.go:hierWith":                          {106, 23, "to split: one schedule phase per function"},
	"costmodel/ps.go:psPushPull":                          {90, 19, "to split: push and pull schedules apart"},
	"costmodel/sim.go:sim.events":                         {139, 28, "to split: the event loop's cases"},
	"costmodel/sim.go:sim.static":                         {95, 24, "to split: the static pass's cases"},
	"harness/ab.go:AB":                                    {103, 29, "to split: pairing, rounds, verdict"},
	"harness/doctor/doctor.go:Options.gather":             {124, 36, "to split (issue 37's area): one check per function"},
	"harness/launch/launch.go:Launch":                     {221, 56, "to split (issue 37's area): launcher choice, process start, wait"},
	"harness/measure.go:measurePoint":                     {131, 34, "to split: warm-up, timed loop, summary"},
	"harness/plan/expand.go:Plan.Expand":                  {77, 30, "to split: block expansion, rounds, the last checks"},
	"harness/plan/expand.go:expander.collectives":         {122, 44, "to split: the cross product, the checks, the groups"},
	"harness/plan/workloads.go:expander.training":         {92, 25, "to split: checks, then the groups"},
	"harness/soak.go:Soak":                                {115, 22, "to split: launches, watching, the summary"},
	"harness/sweep.go:sweeper.group":                      {119, 35, "to split: a group's rounds, records, failures"},
	"internal/rendezvous/join.go:Join":                    {82, 23, "to split: dial, register, wait"},
	"internal/rendezvous/register.go:Session.register":    {98, 26, "to split: one step of the registration per function"},
	"internal/transport/shm_link_linux.go:shmLink.send":   {84, 23, "to split: inline, ring and CMA paths"},
	"internal/transport/tcp.go:NewTCP":                    {103, 22, "to split: options, listen, dial"},
	"internal/transport/tcp_mesh.go:TCP.acceptAll":        {139, 22, "to split: accept, handshake, admit"},
	"reports/compare.go:comparePoint":                     {97, 32, "to split: the tests, then the verdict"},
	"reports/plot_compare.go:Comparison.plotChanges":      {92, 18, "to split: data, then the plot"},
	"reports/plot_convergence.go:report.writeConvergence": {112, 25, "to split: table, then plots"},
	"reports/plot_model.go:report.writeModel":             {87, 19, "to split: table, then plots"},
	"reports/plot_steptime.go:report.writeStepTime":       {82, 15, "to split: table, then plots"},
	"reports/plot_winner.go:report.writeWinners":          {147, 31, "to split: the map's data, then its drawing"},
	"reports/plot_wire.go:report.writeWire":               {91, 25, "to split: table, then plots"},
	"results/rounds.go:mergePoint":                        {84, 19, "to split: samples, rounds, the merged record"},
	"workloads/nn/conv.go:Conv2d.Backward":                {118, 30, "to split: dW, dX and the paths each takes"},
	"workloads/train/dp.go:dataParallel.step":             {87, 16, "to split (issue 39's area): the master's part and the workers'"},
	"workloads/train/train.go:RunOn":                      {125, 26, "to split: set-up, the step loop, the result"},
}

// funcStat is one function's size.
type funcStat struct {
	name              string // file:Func or file:Recv.Method
	lines, complexity int
}

// complexity is the function's cyclomatic complexity, as gocyclo counts it.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil { // default is not a branch
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// funcStats returns the size of every function declared in a Go file.
func funcStats(fset *token.FileSet, name string, src []byte) ([]funcStat, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []funcStat
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		id := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) > 0 {
			t := fn.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if ix, ok := t.(*ast.IndexExpr); ok {
				t = ix.X
			}
			if ix, ok := t.(*ast.IndexListExpr); ok {
				t = ix.X
			}
			if r, ok := t.(*ast.Ident); ok {
				id = r.Name + "." + id
			}
		}
		lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		out = append(out, funcStat{name: name + ":" + id, lines: lines, complexity: complexity(fn)})
	}
	return out, nil
}

func TestFuncSize(t *testing.T) {
	dir := root(t)
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.go")
	cmd.Dir = dir
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if errors.Is(err, exec.ErrNotFound) || errors.As(err, &exitErr) {
		t.Skipf("git ls-files in %s: %v: not a git checkout, nothing to judge", dir, err)
	}
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	fset := token.NewFileSet()
	var over []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, gen, _ := countLines(filepath.Join(dir, name)); gen {
			continue
		}
		stats, err := funcStats(fset, name, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stats {
			if s.lines <= maxFuncLines && s.complexity <= maxFuncComplexity {
				continue
			}
			if l, ok := longFuncs[s.name]; ok {
				if s.lines > l.lines || s.complexity > l.complexity {
					over = append(over, fmt.Sprintf("%s: %d lines, complexity %d, grew past its ceiling (%d, %d: %s)",
						s.name, s.lines, s.complexity, l.lines, l.complexity, l.why))
				}
				continue
			}
			over = append(over, fmt.Sprintf("%s: %d lines, complexity %d", s.name, s.lines, s.complexity))
		}
	}
	sort.Strings(over)
	for _, o := range over {
		t.Errorf("%s: over %d lines or complexity %d; split it by idea, or say why in longFuncs", o, maxFuncLines, maxFuncComplexity)
	}
}

// TestComplexity: the count is gocyclo's, on functions whose count is
// known.
func TestComplexity(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"func f() {}", 1},
		{"func f(a bool) { if a { return } }", 2},
		{"func f(a, b bool) { if a && b || !a { return } }", 4},
		{"func f(x int) { switch x { case 1, 2: case 3: default: } }", 3},
		{"func f(c chan int) { select { case <-c: default: } }", 2},
		{"func f(xs []int) { for range xs { for i := 0; i < 2; i++ {} } }", 3},
	} {
		fset := token.NewFileSet()
		stats, err := funcStats(fset, "x.go", []byte("package x\n"+tc.src))
		if err != nil || len(stats) != 1 {
			t.Fatalf("%s: %v, %d functions", tc.src, err, len(stats))
		}
		if stats[0].complexity != tc.want {
			t.Errorf("%s: complexity %d, want %d", tc.src, stats[0].complexity, tc.want)
		}
	}
}
