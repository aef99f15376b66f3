package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/distbench/distbench/reports"
)

// TestCIRecipe runs the CI recipe's commands (examples/ci/gate.sh, which
// the GitHub Actions workflow calls) as a CI job would, on a repository of
// three commits made from this working tree: the base; a change with an
// injected slowdown (every ring allreduce sleeps 50 ms first: the sizes
// measured take well under a millisecond on an idle machine, and rarely
// over 20 on one loaded to the hilt), which the recipe must fail with a
// regression; and a change that touches nothing measured, which it must
// pass. The gate is ab's paired rounds with a 50% threshold: far below the
// injected slowdown, far above what pairs of one build differ by on a
// busy machine; and "too noisy to judge" passes (NOISY=pass), so that the
// verdict does not depend on the machine's load.
func TestCIRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds three commits and measures them")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on the PATH")
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	copyWorkTree(t, repo)
	git := testGitEnv(tmp)
	sh(t, repo, git, "git", "init", "-q")
	sh(t, repo, git, "git", "add", "-A")
	sh(t, repo, git, "git", "commit", "-q", "-m", "base")
	base := strings.TrimSpace(sh(t, repo, git, "git", "rev-parse", "HEAD"))

	// The slowdown: a file of its own in package ring, and its call as the
	// first statement of ring's AllReduce.
	file := filepath.Join(repo, "strategies", "ring", "allreduce.go")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?m)^func \([^)]*\) AllReduce\([^\n]*\{\n`)
	if !fn.Match(src) {
		t.Fatalf("%s: no AllReduce method to slow down; update this test", file)
	}
	if err := os.WriteFile(file, fn.ReplaceAll(src, []byte("${0}\tinjectedSlowdown()\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "strategies", "ring", "injected_slowdown.go"),
		[]byte("package ring\n\nimport \"time\"\n\nfunc injectedSlowdown() { time.Sleep(50 * time.Millisecond) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, git, "git", "commit", "-q", "-a", "-m", "slower")
	sh(t, repo, git, "git", "add", "-A")
	sh(t, repo, git, "git", "commit", "-q", "-m", "slower, new file")
	slow := strings.TrimSpace(sh(t, repo, git, "git", "rev-parse", "HEAD"))

	sh(t, repo, git, "git", "checkout", "-q", "-b", "clean", base)
	if err := os.WriteFile(filepath.Join(repo, "CHANGELOG.md"), []byte("# Changelog\n\nNothing measured changed.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, git, "git", "commit", "-q", "-a", "-m", "a change that measures the same")
	clean := strings.TrimSpace(sh(t, repo, git, "git", "rev-parse", "HEAD"))

	abFlags := []string{"--strategy", "ring", "--np", "2", "--collective", "allreduce", "--sizes", "4KiB,64KiB",
		"--rounds", "6", "--iters", "60", "--warmup", "2", "--threshold", "50%", "--max-gate", "0%"}
	tests := []struct {
		name, change string
		code         int
		outcome      string
	}{
		{"injected slowdown", slow, 1, reports.OutcomeRegression},
		{"no change measured", clean, 0, reports.OutcomePass},
	}
	for _, tt := range tests {
		out := filepath.Join(tmp, "runs", strings.ReplaceAll(tt.name, " ", "-"))
		cmd := exec.Command("examples/ci/gate.sh", append([]string{base, tt.change}, abFlags...)...)
		cmd.Dir = repo
		summary := filepath.Join(tmp, tt.name+".summary")
		cmd.Env = append(os.Environ(), append(git, "OUT="+out, "NOISY=pass", "GITHUB_STEP_SUMMARY="+summary)...)
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code {
			t.Errorf("%s: gate.sh exit %d, want %d\n%s", tt.name, code, tt.code, b)
			continue
		}
		// What the job keeps and posts: the run directory, its verdict,
		// the summary in the step summary.
		var doc reports.VerdictDoc
		vb, err := os.ReadFile(filepath.Join(out, reports.VerdictFile))
		if err == nil {
			err = json.Unmarshal(vb, &doc)
		}
		if err != nil || doc.Outcome != tt.outcome && !(tt.code == 0 && doc.Outcome == reports.OutcomeTooNoisy) {
			t.Errorf("%s: verdict.json: %v, outcome %q, want %q", tt.name, err, doc.Outcome, tt.outcome)
		}
		posted, err := os.ReadFile(summary)
		if err != nil || !strings.HasPrefix(string(posted), "## distbench ab") {
			t.Errorf("%s: step summary %q (%v), want the markdown summary", tt.name, posted, err)
		}
		for _, f := range []string{"base", "new", reports.CompareFile, "summary.md"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("%s: the run directory lacks %s: %v", tt.name, f, err)
			}
		}
		if tt.code == 1 && !strings.Contains(string(posted), "AllReduce/strategy=ring") {
			t.Errorf("%s: the summary names no ring allreduce regression:\n%s", tt.name, posted)
		}
	}
}
