package main

import (
	"strings"
	"testing"
)

// TestOnePrefix: bad input of every kind (cobra's, pflag's, ours) is one
// line with one "distbench: " and the subcommand at most once, exit status 2.
func TestOnePrefix(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // the whole line
	}{
		{"unknown flag", []string{"run", "--frobnicate"},
			"distbench: run: unknown flag: --frobnicate (see 'distbench run --help')"},
		{"unknown root flag", []string{"--frobnicate"},
			"distbench: unknown flag: --frobnicate (see 'distbench --help')"},
		{"unknown shorthand", []string{"sweep", "-Z"},
			"distbench: sweep: unknown shorthand flag: 'Z' in -Z (see 'distbench sweep --help')"},
		{"bad value", []string{"run", "--np", "x"},
			`distbench: run: invalid argument "x" for "--np" flag: strconv.ParseInt: parsing "x": invalid syntax (see 'distbench run --help')`},
		{"unknown command", []string{"frobnicate"},
			`distbench: unknown command "frobnicate" for "distbench" (see 'distbench --help')`},
		{"misspelt command", []string{"swep"},
			`distbench: unknown command "swep" for "distbench"; did you mean sweep? (see 'distbench --help')`},
		{"stray argument", []string{"strategies", "x"},
			`distbench: unknown command "x" for "distbench strategies" (see 'distbench strategies --help')`},
		{"too few arguments", []string{"compare", "a"},
			"distbench: compare: accepts 2 arg(s), received 1 (see 'distbench compare --help')"},
		{"our own check", []string{"run", "--np", "0"}, "distbench: --np 0: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != 2 || stderr != tt.want+"\n" || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, stdout, stderr, tt.want)
			}
			if n := strings.Count(stderr, "distbench"+":"); n != 1 {
				t.Errorf("%d prefixes in %q", n, stderr)
			}
		})
	}
}
