package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/distbench/distbench"

// A layerRule forbids the packages matching from (less those matching
// except) to depend, directly or through others, on packages matching deny
// (less allow). Patterns are relative to the module: "x" is package x only,
// "x/..." is x and everything under it, "..." is the whole module.
type layerRule struct {
	name         string
	from, except []string
	deny, allow  []string
}

var layers = []layerRule{
	{
		name: "the API imports no implementation of it, nor what runs it",
		from: []string{"collective", "collective/driver/..."},
		deny: []string{"strategies/...", "harness/...", "cmd/...", "workloads/..."},
	},
	{
		name: "strategies import no harness, CLI or workload",
		from: []string{"strategies/..."},
		deny: []string{"harness/...", "cmd/...", "workloads/..."},
	},
	{
		name: "workloads speak the API only: no strategy, harness or CLI",
		from: []string{"workloads/..."},
		deny: []string{"strategies/...", "harness/...", "cmd/..."},
	},
	{
		name: "the harness imports no CLI",
		from: []string{"harness/..."},
		deny: []string{"cmd/..."},
	},
	{
		name:   "bench/ holds scripts: nothing outside it imports it",
		from:   []string{"..."},
		except: []string{"bench/..."},
		deny:   []string{"bench/..."},
	},
	{
		name: "the harness's parts do not import the harness that assembles them",
		from: []string{"harness/plan/...", "harness/job/...", "harness/launch/..."},
		deny: []string{"harness"},
	},
	{
		name: "internal/ holds the engine's leaves: none imports a layer above it",
		from: []string{"internal/..."},
		deny: []string{"strategies/...", "harness/...", "cmd/...", "workloads/...", "reports/...", "costmodel/...", "peers/...", "capi/..."},
	},
	{
		name: "reports and the cost model never reach a strategy: the schedules' shapes are internal/shapes",
		from: []string{"reports/...", "costmodel/..."},
		deny: []string{"strategies/..."},
	},
	{
		name: "a plan, a job spec and a report read links through internal/linkspec, not the TCP transport",
		from: []string{"reports/...", "harness/plan/...", "harness/job/..."},
		deny: []string{"internal/transport/..."},
	},
	{
		name:  "stats is pure: it imports nothing of distbench",
		from:  []string{"stats/..."},
		deny:  []string{"..."},
		allow: []string{"stats/..."},
	},
}

// pkg is what `go list -json` says of a package that the rules read.
type pkg struct {
	ImportPath string
	Imports    []string // direct, of the non-test files
	Deps       []string // transitive, of the non-test files
}

// violation is one forbidden dependency.
type violation struct {
	rule     string
	from, to string // relative to the module
	direct   bool
}

func (v violation) edge() string { return v.from + " -> " + v.to }

func (v violation) String() string {
	how := "imports"
	if !v.direct {
		how = "depends (through other packages) on"
	}
	return fmt.Sprintf("%s %s %s: %s", v.from, how, v.to, v.rule)
}

// rel is path relative to the module, and false for packages outside it.
func rel(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func match(pattern, path string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// check returns every dependency of pkgs that a rule forbids, in order.
func check(rules []layerRule, pkgs []pkg) []violation {
	var out []violation
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !matchAny(r.from, from) || matchAny(r.except, from) {
				continue
			}
			for _, d := range p.Deps {
				to, ok := rel(d)
				if !ok || to == from || !matchAny(r.deny, to) || matchAny(r.allow, to) {
					continue
				}
				out = append(out, violation{rule: r.name, from: from, to: to, direct: slices.Contains(p.Imports, d)})
			}
		}
	}
	return out
}

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		t.Fatalf("go env GOMOD: %q, %v", out, err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; is this the distbench module?", len(pkgs))
	}
	for _, v := range check(layers, pkgs) {
		t.Errorf("%v", v)
	}
}

// TestLayerRulesCatch runs fake import graphs through the same checker, so
// that a rule that stopped matching (a typo in a pattern, a package renamed)
// fails here rather than passing everything.
func TestLayerRulesCatch(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	tests := []struct {
		name string
		from string
		deps []string // the first is a direct import, the others indirect
		want []string // edges reported
	}{
		{"workload imports a strategy", "workloads/train", []string{m("strategies/ps")}, []string{"workloads/train -> strategies/ps"}},
		{"workload reaches a strategy through another package", "workloads/train",
			[]string{m("results"), m("strategies/ring")}, []string{"workloads/train -> strategies/ring"}},
		{"API imports a strategy", "collective", []string{m("strategies/ring")}, []string{"collective -> strategies/ring"}},
		{"driver imports the harness", "collective/driver", []string{m("harness")}, []string{"collective/driver -> harness"}},
		{"strategy imports the harness", "strategies/tree", []string{m("harness/plan")}, []string{"strategies/tree -> harness/plan"}},
		{"strategy imports a workload", "strategies/ps", []string{m("workloads/nn")}, []string{"strategies/ps -> workloads/nn"}},
		{"harness imports the CLI", "harness/launch", []string{m("cmd/distbench")}, []string{"harness/launch -> cmd/distbench"}},
		{"a harness part imports the harness", "harness/plan", []string{m("harness")}, []string{"harness/plan -> harness"}},
		{"stats imports results", "stats", []string{m("results")}, []string{"stats -> results"}},
		{"the CLI imports bench", "cmd/distbench", []string{m("bench/lib")}, []string{"cmd/distbench -> bench/lib"}},
		{"the module root imports bench", ".", []string{m("bench/x")}, []string{". -> bench/x"}},

		{"an internal leaf imports a strategy", "internal/core", []string{m("strategies/ring")}, []string{"internal/core -> strategies/ring"}},
		{"an internal leaf reaches the harness", "internal/telemetry", []string{m("results"), m("harness/job")}, []string{"internal/telemetry -> harness/job"}},
		{"an internal leaf imports the cost model", "internal/shapes", []string{m("costmodel")}, []string{"internal/shapes -> costmodel"}},
		{"the cost model imports a strategy for its shapes", "costmodel", []string{m("strategies/tree")}, []string{"costmodel -> strategies/tree"}},
		{"reports reach a strategy through the cost model", "reports", []string{m("costmodel"), m("strategies/ring")}, []string{"reports -> strategies/ring"}},
		{"a report reads a link through the transport", "reports", []string{m("internal/transport")}, []string{"reports -> internal/transport"}},
		{"a job spec reads a link through the transport", "harness/job", []string{m("internal/transport")}, []string{"harness/job -> internal/transport"}},
		{"a plan reaches the transport through a job", "harness/plan", []string{m("harness/job"), m("internal/transport")},
			[]string{"harness/plan -> internal/transport"}},

		{"internal leaves import the API, results and each other", "internal/telemetry", []string{m("results"), m("collective"), m("internal/wire")}, nil},
		{"the cost model imports the shapes and the engine", "costmodel", []string{m("internal/shapes"), m("internal/core"), m("stats")}, nil},
		{"reports read links and the cost model", "reports", []string{m("internal/linkspec"), m("costmodel")}, nil},
		{"strategies import the shapes and the transport's vocabulary", "strategies/tree", []string{m("internal/shapes"), m("internal/linkspec")}, nil},
		{"harness imports its parts", "harness", []string{m("harness/plan"), m("harness/job"), m("harness/launch")}, nil},
		{"a harness part imports another", "harness/job", []string{m("harness/plan")}, nil},
		{"stats imports the standard library and others'", "stats", []string{"math", "golang.org/x/perf/benchmath"}, nil},
		{"workloads import the API and shared packages", "workloads/train", []string{m("collective"), m("stats"), m("results")}, nil},
		{"strategies import the engine", "strategies/ring", []string{m("collective"), m("internal/core")}, nil},
		{"bench imports bench", "bench/tool", []string{m("bench/lib")}, nil},
		{"the CLI imports everything else", "cmd/distbench", []string{m("harness"), m("strategies/all"), m("workloads/train")}, nil},
		{"a package outside the module is not judged", "example.com/x/workloads", []string{m("strategies/ps")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.from
			if !strings.Contains(path, ".com/") {
				path = m(path)
				if tt.from == "." {
					path = module
				}
			}
			p := pkg{ImportPath: path, Imports: tt.deps[:1], Deps: tt.deps}
			var got []string
			for _, v := range check(layers, []pkg{p}) {
				got = append(got, v.edge())
				if wantDirect := v.to == strings.TrimPrefix(tt.deps[0], module+"/"); v.direct != wantDirect {
					t.Errorf("%v: direct = %v, want %v", v, v.direct, wantDirect)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations %q, want %q", got, tt.want)
			}
		})
	}
}

// maxLines is the most lines a non-test, non-generated Go file may have: past
// it, a file holds more than one idea.
const maxLines = 600

// generated is the line Go's convention marks generated files with.
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func TestFileLength(t *testing.T) {
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
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		n, gen, err := countLines(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if gen || n <= maxLines {
			continue
		}
		t.Errorf("%s: %d lines, over %d: split it by concern, one file one idea", name, n, maxLines)
	}
}

// countLines returns the number of lines of a Go file and whether it is
// generated (the marker comes before the package clause).
func countLines(path string) (n int, generatedFile bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	inHeader := true
	for sc.Scan() {
		n++
		line := sc.Text()
		if inHeader {
			if strings.HasPrefix(line, "package ") {
				inHeader = false
			} else if generated.MatchString(line) {
				generatedFile = true
			}
		}
	}
	return n, generatedFile, sc.Err()
}
