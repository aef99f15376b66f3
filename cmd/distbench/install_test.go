package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGoInstall installs distbench as a user would, `go install
// github.com/distbench/distbench/cmd/distbench@VERSION`, into an empty
// GOBIN with an empty module cache, from a repository holding this
// working tree (tracked and new files) as its commits: once at a release
// tag and once at a commit after it. Git's insteadOf stands the local
// repository in for github.com, so the go command fetches it over VCS
// exactly as from GitHub (GOPRIVATE: direct, no proxy); the dependencies
// come from this machine's module cache served as a file:// proxy, and
// GOSUMDB is off because sum.golang.org is out of reach here (go.sum's
// hashes of the dependencies were checked when they entered the cache).
// Each binary's --version must name its version and commit.
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go install of the whole CLI takes a minute or more")
	}
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on the PATH", tool)
		}
	}
	cache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	tmp := t.TempDir()
	src, modcache, gobin := filepath.Join(tmp, "src"), filepath.Join(tmp, "modcache"), filepath.Join(tmp, "bin")
	for _, d := range []string{src, modcache, gobin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyWorkTree(t, src)
	gitEnv := testGitEnv(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "gitconfig"),
		[]byte("[url \""+src+"\"]\n\tinsteadOf = https://github.com/distbench/distbench\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, src, gitEnv, "git", "init", "-q")
	sh(t, src, gitEnv, "git", "add", "-A")
	sh(t, src, gitEnv, "git", "commit", "-q", "-m", "release")
	sh(t, src, gitEnv, "git", "tag", "v0.1.0")
	sh(t, src, gitEnv, "git", "commit", "-q", "--allow-empty", "-m", "after the release")
	after := strings.TrimSpace(sh(t, src, gitEnv, "git", "rev-parse", "HEAD"))

	goEnvs := append(gitEnv, "GOMODCACHE="+modcache, "GOBIN="+gobin, "GOPATH="+filepath.Join(tmp, "gopath"),
		"GOPRIVATE=github.com/distbench/distbench", "GOPROXY=file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download")),
		"GOSUMDB=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	tests := []struct {
		at   string
		want *regexp.Regexp
	}{
		{"v0.1.0", regexp.MustCompile(`^distbench version v0\.1\.0, the commit of tag v0\.1\.0, go`)},
		{after[:12], regexp.MustCompile(`^distbench version v0\.1\.1-0\.\d{14}-` + after[:12] + `, commit ` + after[:12] + `, go`)},
	}
	for _, tt := range tests {
		sh(t, tmp, goEnvs, "go", "install", "github.com/distbench/distbench/cmd/distbench@"+tt.at)
		got := sh(t, tmp, nil, filepath.Join(gobin, "distbench"), "--version")
		if !tt.want.MatchString(got) {
			t.Errorf("go install @%s: --version printed %q, want a match of %s", tt.at, got, tt.want)
		}
	}
	// The module cache is read-only as the go command leaves it.
	sh(t, tmp, nil, "chmod", "-R", "u+w", modcache)
}

func goEnv(t *testing.T, key string) string {
	return sh(t, ".", nil, "go", "env", key)
}

// sh runs a command in dir with env added to the test's, and returns its
// standard output; a failure ends the test with its output.
func sh(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// copyWorkTree copies the repository's working tree as it is (tracked and
// new files, not ignored ones) into dst: tests of what users do with a
// clone check the code under test, not HEAD.
func copyWorkTree(t *testing.T, dst string) {
	t.Helper()
	root := strings.TrimSpace(sh(t, "../..", nil, "git", "rev-parse", "--show-toplevel"))
	files := sh(t, root, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for _, f := range strings.Split(strings.TrimRight(files, "\x00"), "\x00") {
		src := filepath.Join(root, f)
		st, err := os.Stat(src)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		} else if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// testGitEnv is a git environment of the test's own: no user or system
// configuration, a fixed author.
func testGitEnv(tmp string) []string {
	return []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(tmp, "gitconfig"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
}
