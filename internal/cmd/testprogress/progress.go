package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is the part of a test2json event (go doc test2json) this reads.
// Build events (Action "build-output", "build-fail") name the package in
// ImportPath rather than Package.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// decoder reads the command's output: one JSON event a line, and any
// other line (a build error printed without -json's framing) as text.
type decoder struct{ sc *bufio.Scanner }

func newDecoder(r io.Reader) *decoder {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &decoder{sc: sc}
}

// textLine is what next returns for a line that is not an event.
type textLine string

func (t textLine) Error() string { return string(t) }

func (d *decoder) next() (event, error) {
	if !d.sc.Scan() {
		if err := d.sc.Err(); err != nil {
			return event{}, textLine("testprogress: reading go test's output: " + err.Error())
		}
		return event{}, io.EOF
	}
	line := d.sc.Bytes()
	var e event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
		return event{}, textLine(string(line))
	}
	return e, nil
}

// progress turns events into lines. It is driven with explicit times so
// that its tests need no clock.
type progress struct {
	w        io.Writer
	start    time.Time
	last     time.Time // when a line was last printed
	of       int
	running  map[string]time.Time // package -> when its binary started
	output   map[string]*pkgOutput
	ok, fail int
	noTests  int
	failed   []string
}

func newProgress(w io.Writer, now time.Time, of int) *progress {
	return &progress{w: w, start: now, last: now, of: of, running: map[string]time.Time{}, output: map[string]*pkgOutput{}}
}

func (p *progress) printf(now time.Time, format string, args ...any) {
	fmt.Fprintf(p.w, format, args...)
	p.last = now
}

func (p *progress) text(s string) { fmt.Fprintln(p.w, s) }

func (p *progress) count() string {
	n := p.ok + p.fail + p.noTests
	if p.of > 0 {
		return fmt.Sprintf("[%d/%d]", n, p.of)
	}
	return fmt.Sprintf("[%d]", n)
}

func (p *progress) event(e event, now time.Time) {
	pkg := e.Package
	switch {
	case e.Action == "build-output":
		p.printf(now, "%s", e.Output) // compiler errors, as go build prints them
		return
	case e.Action == "build-fail":
		return // the package's own fail event follows
	case pkg == "":
		return
	case e.Action == "start":
		p.running[pkg] = now
		return
	}
	o := p.output[pkg]
	if o == nil {
		o = &pkgOutput{tests: map[string][]string{}}
		p.output[pkg] = o
	}
	if e.Action == "output" {
		o.add(e.Test, e.Output)
		return
	}
	if e.Test != "" {
		if e.Action == "pass" || e.Action == "skip" {
			o.drop(e.Test) // only failed and unfinished tests' output is shown
		}
		return
	}
	switch e.Action {
	case "pass", "fail", "skip":
	default:
		return
	}
	delete(p.running, pkg)
	delete(p.output, pkg)
	switch {
	case e.Action == "fail":
		p.fail++
		p.failed = append(p.failed, pkg)
		p.printf(now, "%s", o.text())
		p.printf(now, "%s FAIL %s (%.1fs)\n", p.count(), pkg, e.Elapsed)
	case e.Action == "skip" || o.noTestFiles():
		p.noTests++ // no test files: counted, not printed
	default:
		p.ok++
		p.printf(now, "%s ok   %s (%.1fs)\n", p.count(), pkg, e.Elapsed)
	}
}

// pkgOutput is a package's output so far: the package's own lines ("" as
// the test) and each test's that has not passed, in the order they began.
type pkgOutput struct {
	order []string
	tests map[string][]string
}

func (o *pkgOutput) add(test, line string) {
	if _, ok := o.tests[test]; !ok {
		o.order = append(o.order, test)
	}
	o.tests[test] = append(o.tests[test], line)
}

func (o *pkgOutput) drop(test string) { o.tests[test] = nil }

func (o *pkgOutput) text() string {
	var b strings.Builder
	for _, t := range o.order {
		for _, l := range o.tests[t] {
			b.WriteString(l)
		}
	}
	return b.String()
}

func (o *pkgOutput) noTestFiles() bool {
	own := o.tests[""]
	return len(own) > 0 && strings.Contains(own[len(own)-1], "[no test files]")
}

// tick prints what is going on when nothing has been printed for every.
func (p *progress) tick(now time.Time, every time.Duration) {
	if now.Sub(p.last) < every {
		return
	}
	el := now.Sub(p.start).Truncate(time.Second)
	if len(p.running) == 0 {
		p.printf(now, "%s %s: building test binaries, or running packages whose output is not yet shown…\n", p.count(), el)
		return
	}
	pkgs := make([]string, 0, len(p.running))
	for k := range p.running {
		pkgs = append(pkgs, k)
	}
	// Longest-running first: those are what the wait is for.
	slices.SortFunc(pkgs, func(a, b string) int { return p.running[a].Compare(p.running[b]) })
	parts := make([]string, len(pkgs))
	for i, k := range pkgs {
		parts[i] = fmt.Sprintf("%s (%s)", k, now.Sub(p.running[k]).Truncate(time.Second))
	}
	p.printf(now, "%s %s: running %s\n", p.count(), el, strings.Join(parts, ", "))
}

// finish prints the closing line.
func (p *progress) finish(now time.Time, code int) {
	el := now.Sub(p.start).Truncate(time.Second)
	verdict := "ok"
	if code != 0 {
		verdict = fmt.Sprintf("FAIL (exit %d)", code)
	}
	p.printf(now, "go test: %s in %s: %d packages passed, %d failed, %d without tests\n", verdict, el, p.ok, p.fail, p.noTests)
	if len(p.failed) > 0 {
		p.printf(now, "failed: %s\n", strings.Join(p.failed, " "))
	}
}
