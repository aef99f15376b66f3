package launch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWorkerProcs(t *testing.T) {
	for _, tc := range []struct {
		procs, cores int
		maxprocs     int
		spin         bool
	}{
		{procs: 2, cores: 2, maxprocs: 1, spin: true},
		{procs: 4, cores: 2, maxprocs: 1, spin: false},
		{procs: 2, cores: 16, maxprocs: 8, spin: true},
		{procs: 3, cores: 16, maxprocs: 5, spin: true},
		{procs: 1, cores: 1, maxprocs: 1, spin: true},
		{procs: 9, cores: 8, maxprocs: 1, spin: false},
	} {
		maxprocs, spin := workerProcs(tc.procs, tc.cores)
		if maxprocs != tc.maxprocs || (spin > 0) != tc.spin {
			t.Errorf("workerProcs(%d procs, %d cores) = GOMAXPROCS %d, spin %v; want %d, spinning %v",
				tc.procs, tc.cores, maxprocs, spin, tc.maxprocs, tc.spin)
		}
	}
}

func TestBindings(t *testing.T) {
	for _, tc := range []struct {
		procs int
		cpus  []int
		want  []string
	}{
		{2, []int{0, 1}, []string{"0", "1"}},
		{2, []int{0, 1, 2, 3}, []string{"0,1", "2,3"}},
		{3, []int{4, 5, 6, 7, 8, 9, 10}, []string{"4,5", "6,7", "8,9"}},
		{3, []int{0, 1}, nil}, // fewer CPUs than processes: no binding
		{1, nil, nil},
	} {
		if got := bindings(tc.procs, tc.cpus); !slices.Equal(got, tc.want) {
			t.Errorf("bindings(%d, %v) = %q, want %q", tc.procs, tc.cpus, got, tc.want)
		}
	}
}

// A worker exits once its launcher's end of the pipe closes, however the
// launcher went: here a helper process is given the pipe as Launch gives it,
// but none of Launch's other ties (no death signal), so that it is the pipe
// alone that ends it.
func TestWorkerExitsWithLauncher(t *testing.T) {
	if os.Getenv(envWatchHelper) != "" {
		t.Skip("the helper itself")
	}
	lifeline, held, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchLauncherHelper$")
	cmd.Env = append(os.Environ(), envWatchHelper+"=1", EnvLauncherFD+"=3")
	cmd.ExtraFiles = []*os.File{lifeline}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lifeline.Close()
	exited := make(chan error, 1)
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "watching" {
		t.Fatalf("helper said %q, want watching", sc.Text())
	}
	go func() { io.Copy(io.Discard, stdout); exited <- cmd.Wait() }()

	held.Close() // as the launcher's death would
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != watchHelperExit {
			t.Fatalf("helper ended with %v, want exit status %d", err, watchHelperExit)
		}
	case <-time.After(20 * time.Second): // generous: it takes a moment
		t.Fatal("the helper still runs 20s after its launcher's end of the pipe closed")
	}
}

const (
	envWatchHelper  = "DISTBENCH_TEST_WATCH_HELPER"
	watchHelperExit = 7
)

// TestWatchLauncherHelper is the worker of TestWorkerExitsWithLauncher.
func TestWatchLauncherHelper(t *testing.T) {
	if os.Getenv(envWatchHelper) == "" {
		t.Skip("run by TestWorkerExitsWithLauncher")
	}
	if err := watchLauncher(os.Getenv, func() { os.Exit(watchHelperExit) }); err != nil {
		t.Fatal(err)
	}
	fmt.Println("watching")
	time.Sleep(time.Minute) // until the watcher ends the process
	t.Fatal("the watcher did not end the process")
}

// A launcher's pipe that is not a descriptor number is refused, in words.
func TestWatchLauncherBadFD(t *testing.T) {
	for _, v := range []string{"three", "1", "-3"} {
		getenv := func(k string) string {
			if k == EnvLauncherFD {
				return v
			}
			return ""
		}
		err := watchLauncher(getenv, func() { t.Errorf("%s=%q: gone called", EnvLauncherFD, v) })
		if err == nil || !strings.Contains(err.Error(), EnvLauncherFD) || !strings.Contains(err.Error(), "3 or more") {
			t.Errorf("%s=%q: got %v, want an error naming the variable and what it accepts", EnvLauncherFD, v, err)
		}
	}
}

// A job whose 16 processes all failed is one line of bounded length: the
// culprit first, then how many others and which, and the file that keeps
// every failure.
func TestFailureErrorIsBounded(t *testing.T) {
	long := strings.Repeat("ring: allreduce #418: step 3 of 6: recv: timed out waiting for rank 2 ", 8)
	failures := []string{"rank 2 was stopped (SIGSTOP or a debugger); killed"}
	for r := range 16 {
		if r != 2 {
			failures = append(failures, fmt.Sprintf("rank %d (pid %d) exit status 1: %s", r, 1000+r, long))
		}
	}
	path := filepath.Join(t.TempDir(), "failures.txt")
	err := failureError(path, failures)
	line := err.Error()
	switch {
	case strings.Contains(line, "\n"):
		t.Fatalf("not one line: %q", line)
	case len(line) > maxCulprit+400:
		t.Errorf("%d bytes: %s", len(line), line)
	case !strings.HasPrefix(line, "rank 2 was stopped"):
		t.Errorf("the culprit is not first: %s", line)
	case !strings.Contains(line, "; and 15 other process(es) failed (rank 0, rank 1, rank 3, rank 4, rank 5, rank 6, rank 7, rank 8, 7 more): every failure written to "+path):
		t.Errorf("the summary: %s", line)
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil || strings.Count(string(b), "\n") != 16 || !strings.Contains(string(b), "rank 15 (pid 1015)") {
		t.Errorf("the file: %v\n%s", rerr, b)
	}
	if one := failureError(path, failures[:1]).Error(); one != failures[0] {
		t.Errorf("one failure: %q", one)
	}
}
