package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	bi := func(mod string, kv ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{Main: debug.Module{Path: "github.com/distbench/distbench", Version: mod}}
		for i := 0; i+1 < len(kv); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return b
	}
	gov := ", " + runtime.Version()
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "unknown, commit unknown" + gov},
		{"go install of a tag", bi("v1.2.3"), true, "v1.2.3, the commit of tag v1.2.3" + gov},
		{"go install of a commit", bi("v0.1.1-0.20261126002610-4ae8784abcde"), true, "v0.1.1-0.20261126002610-4ae8784abcde, commit 4ae8784abcde" + gov},
		{"no VCS", bi("(devel)"), true, "(devel), commit unknown" + gov},
		{"checkout", bi("(devel)", "vcs.revision", "4ae8784", "vcs.modified", "false"), true, "(devel), commit 4ae8784" + gov},
		{"dirty checkout", bi("v0.0.0-20261126002610-4ae8784abcde+dirty", "vcs.revision", "4ae8784", "vcs.modified", "true"), true,
			"v0.0.0-20261126002610-4ae8784abcde+dirty, commit 4ae8784-dirty" + gov},
	}
	for _, tt := range tests {
		if got := version(tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestVersionCLI: --version, -v and the version command print the same line.
func TestVersionCLI(t *testing.T) {
	want := "distbench version " + version(debug.ReadBuildInfo()) + "\n"
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and %q", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
}
