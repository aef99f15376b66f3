package main

import (
	"bytes"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/reports/nccltests"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the code prints now")

func TestCheckFlag(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"-c", "0"}, 0},
		{[]string{"-c", "3"}, 3},
		{[]string{"--check"}, 1},
		{[]string{"--check", "0"}, 0}, // nccl-tests' form
		{[]string{"--check", "3", "-d", "int8"}, 3},
		{[]string{"--check=false"}, 0},
		{[]string{"--check=true"}, 1},
		{[]string{"--check=2"}, 2},
		{[]string{"--datatype", "double", "--check=0"}, 0},
	}
	for _, tt := range tests {
		cmd := newRunCmd(&bytes.Buffer{}, &bytes.Buffer{})
		if err := cmd.ParseFlags(joinSeparatedValues(tt.args)); err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		f := cmd.Flags()
		if got := f.Lookup("check").Value.String(); got != strconv.Itoa(tt.want) {
			t.Errorf("%q: check %s, want %d", tt.args, got, tt.want)
		}
		// What the workers get: checked runs per point, or no check.
		spec, err := (&runFlags{strategy: "ring", coll: "allreduce", dtype: "float32", op: "sum", minBytes: "4K", maxBytes: "4K",
			stepFactor: 2, np: 2, iters: 1, inplace: "both", launcher: "local", timeout: time.Minute, average: -1, cycles: 1,
			check: checkCount{tt.want}}).spec()
		if err != nil || spec.Check != (tt.want > 0) || spec.CheckRuns != tt.want {
			t.Errorf("%q: spec check %v, runs %d, err %v", tt.args, spec.Check, spec.CheckRuns, err)
		}
	}
	// An argument after --check that is no count stays an argument.
	code, _, stderr := runCLI(t, "run", "--check", "yes")
	if code != 2 || !strings.Contains(stderr, `unexpected argument "yes"`) || !strings.Contains(stderr, "--check alone means --check=1") {
		t.Errorf("--check yes: exit %d, %q", code, stderr)
	}
}

// TestTableBlocks holds nccltests.Blocks, which says which collectives'
// count column is per rank, to the harness's own traits.
func TestTableBlocks(t *testing.T) {
	for _, c := range job.Collectives() {
		tr, _ := job.TraitsOf(c)
		if got := nccltests.Blocks(c); got != tr.Blocks {
			t.Errorf("nccltests.Blocks(%q) = %v, harness/job says %v", c, got, tr.Blocks)
		}
	}
}
