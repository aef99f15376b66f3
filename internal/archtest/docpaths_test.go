package archtest

import (
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath is a path into docs/ as code, scripts and documents name it
// ("see docs/design/costmodel.md"); it ends on a letter, a digit or a
// slash, so that a sentence's full stop or a closing bracket is not part
// of it.
var docPath = regexp.MustCompile(`(?:^|[^\w/.-])(docs/(?:[\w.-]+/)*[\w.-]*[\w/])`)

// mdLink is a markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// externalDocPaths are docs/ paths named in this tree that are other
// projects' files, not ours, and why they are named.
var externalDocPaths = map[string]string{
	"docs/rationale.md": "BytePS's (bytedance/byteps), cited for its S/B bound in docs/design/costmodel.md",
}

// pendingDocPaths are documents that code already names and that another
// issue is writing as this test is written; they are logged, not failed,
// until they land. Remove an entry once its file exists.
var pendingDocPaths = map[string]string{}

// TestDocPaths: every documentation path that code, scripts, the README,
// the docs and the reports name exists, and every relative link in a
// markdown file leads to a file or directory of the tree, so that a
// document moved or renamed leaves no reader at a dead end.
func TestDocPaths(t *testing.T) {
	dir := root(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = dir
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if errors.Is(err, exec.ErrNotFound) || errors.As(err, &exitErr) {
		t.Skipf("git ls-files in %s: %v: not a git checkout, nothing to judge", dir, err)
	}
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		return err == nil
	}
	checked := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if !namesDocs(name) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, m := range docPath.FindAllStringSubmatch(line, -1) {
				p := m[1]
				checked++
				if _, ok := externalDocPaths[p]; ok || exists(p) {
					continue
				}
				if why, ok := pendingDocPaths[p]; ok {
					t.Logf("%s:%d: names %s, not written yet: %s", name, i+1, p, why)
					continue
				}
				t.Errorf("%s:%d: names %s, which does not exist", name, i+1, p)
			}
			if !strings.HasSuffix(name, ".md") {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				rel := path.Join(path.Dir(name), target)
				checked++
				if !strings.HasPrefix(rel, "../") && exists(rel) {
					continue
				}
				if why, ok := pendingDocPaths[rel]; ok {
					t.Logf("%s:%d: links to %s, not written yet: %s", name, i+1, rel, why)
					continue
				}
				t.Errorf("%s:%d: links to %s (%s), which does not exist", name, i+1, m[1], rel)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d documentation paths found: is the pattern still right?", checked)
	}
}

// namesDocs reports whether a file of the tree is one whose documentation
// paths are checked: source, scripts, plans, the Makefile and markdown.
func namesDocs(name string) bool {
	switch path.Ext(name) {
	case ".go", ".md", ".sh", ".py", ".yaml", ".yml", ".h", ".c":
		return true
	}
	return path.Base(name) == "Makefile" || path.Base(name) == "Dockerfile"
}

// TestDocPathPatterns: the patterns find what a sentence names and leave
// out its punctuation.
func TestDocPathPatterns(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"see docs/design/costmodel.md.", []string{"docs/design/costmodel.md"}},
		{"(docs/guide/ab.md, docs/tuning/)", []string{"docs/guide/ab.md", "docs/tuning/"}},
		{"`docs/tuning.md`; and docs/notes/compute.md:", []string{"docs/tuning.md", "docs/notes/compute.md"}},
		{"in ../docs/x.md or mydocs/y.md", nil},
		{"no path here: documents/a.md", nil},
	} {
		var got []string
		for _, m := range docPath.FindAllStringSubmatch(tc.line, -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q: found %q, want %q", tc.line, got, tc.want)
		}
	}
}
