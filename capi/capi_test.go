package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestFromC builds libdistbench.so and a C program (testdata/smoke.c)
// against distbench.h, and runs it: the header and the library agree, and
// each status a single rank can reach comes back with its message.
func TestFromC(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the c-shared library (a minute or more here)")
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: libdistbench.so needs cgo and a C compiler")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	lib := filepath.Join(dir, "libdistbench.so")
	build := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildmode=c-shared", "-o", lib, ".")
	build.Env = append(build.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared: %v\n%s", err, out)
	}
	exe := filepath.Join(dir, "smoke")
	if out, err := exec.CommandContext(ctx, cc, "-Wall", "-Werror", "-I.", "-o", exe, "testdata/smoke.c", "-L"+dir, "-ldistbench", "-Wl,-rpath,"+dir).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	run := exec.CommandContext(ctx, exe)
	run.Env = append(run.Environ(), "DISTBENCH_STRATEGY=", "DISTBENCH_OUT=")
	out, err := run.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("smoke: %v\n%s", err, out)
	}
}
