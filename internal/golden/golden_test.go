package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name, want, got, diff string
	}{
		{"changed line", "a\nb\nc\n", "a\nB\nc\n", "from line 2:\n- b\n+ B\n"},
		{"inserted line", "a\nc\nd\ne\n", "a\nb\nc\nd\ne\n", "from line 2:\n+ b\n"},
		{"removed line", "a\nb\nc\n", "a\nc\n", "from line 2:\n- b\n"},
		{"appended", "a\n", "a\nb\n", "from line 2:\n+ b\n"},
		{"everything", "x", "y", "from line 1:\n- x\n+ y\n"},
		{"repeated lines", "a\na\n", "a\na\na\n", "from line 3:\n+ a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff(tt.want, tt.got); got != tt.diff {
				t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", tt.want, tt.got, got, tt.diff)
			}
		})
	}
}

// recorder is a testing.TB that keeps failures instead of failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	check := func(got string, update bool) bool {
		r := &recorder{TB: t}
		Check(r, path, []byte(got), update)
		return !r.failed
	}
	if check("a\n", false) {
		t.Fatal("a missing golden file passed")
	}
	if !check("a\n", true) {
		t.Fatal("-update failed")
	}
	if b, _ := os.ReadFile(path); string(b) != "a\n" {
		t.Fatalf("-update wrote %q, want %q", b, "a\n")
	}
	if !check("a\n", false) {
		t.Fatal("the output just written does not match its golden file")
	}
	if check("b\n", false) {
		t.Fatal("a different output passed")
	}
}
