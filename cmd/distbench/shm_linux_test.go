package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/data"
)

// TestRunShm runs real worker processes with their pairs in shared memory:
// the results are right, every record says shm (and its point id too, so
// that compare never matches it with TCP), the table's preamble names it,
// and nothing is left in /dev/shm.
func TestRunShm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	before := shmEntries(t)
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	code, stdout, stderr := runCLI(t, "run", "--transport", "shm", "--strategy", "ring", "--np", "3", "--collective", "allreduce",
		"-b", "4KiB", "-e", "4MiB", "-f", "32", "--iters", "3", "--warmup", "1", "-c", "1", "--inplace", "in", "--json", jsonPath, "--timeout", "1m")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "# distbench: strategy ring, np 3, transport shm") {
		t.Errorf("the preamble does not name the transport:\n%s", stdout)
	}
	recs := readJSONL(t, jsonPath)
	if len(recs) != 3 {
		t.Fatalf("%d JSON records, want 3", len(recs))
	}
	for _, r := range recs {
		if r.Transport != "shm" || !strings.HasSuffix(r.Point, "/mesh=shm") || r.Wrong != 0 || r.TimeUs <= 0 {
			t.Errorf("bad record: transport %q, point %q, wrong %d, time %v", r.Transport, r.Point, r.Wrong, r.TimeUs)
		}
	}
	for e := range shmEntries(t) {
		// Another job's segment lives for a moment while its mesh
		// forms; a leaked one outlives its creator, whose pid it names.
		pid, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(e, "distbench-shm."), ".")[0])
		if !before[e] && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH {
			t.Errorf("left in /dev/shm: %s", e)
		}
	}
}

// shmEntries is the set of distbench segments in /dev/shm now (other jobs
// on the machine may have some of theirs there for a moment).
func shmEntries(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	m := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "distbench-shm.") {
			m[e.Name()] = true
		}
	}
	return m
}

// TestTrainTransport trains over each transport: the choice reaches the
// workers' mesh (shm fails the run if a pair cannot share memory), the
// preamble names it, and every step and epoch record carries it, so that a
// report tells "ring" from "ring/shm".
func TestTrainTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeIDXData(t, dir, data.Train, 64)
	writeIDXData(t, dir, data.Test, 32)
	for _, tc := range []struct{ flag, want string }{{"tcp", "tcp"}, {"shm", "shm"}, {"auto", "auto"}} {
		t.Run(tc.flag, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			code, stdout, stderr := runCLI(t, "train", "--data", dir, "--model", "mlp", "--np", "2", "--epochs", "1", "--max-steps", "2",
				"--batch", "32", "--transport", tc.flag, "--out", out, "--timeout", "1m")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "np 2, transport "+tc.want+",") {
				t.Errorf("the preamble does not name transport %s:\n%s", tc.want, stdout)
			}
			var n int
			for _, r := range readJSONL(t, filepath.Join(out, "results.jsonl")) {
				if r.Kind != results.KindTrainStep && r.Kind != results.KindTrainEpoch {
					continue
				}
				n++
				if r.Transport != tc.want {
					t.Errorf("%s record of step %d: transport %q, want %q", r.Kind, r.Step, r.Transport, tc.want)
				}
			}
			if n != 3 { // two steps, one epoch
				t.Errorf("%d training records, want 3", n)
			}
		})
	}
}
