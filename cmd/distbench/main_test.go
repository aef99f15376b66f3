package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/distbench/distbench/harness"
)

// TestMain lets the test binary be its own worker: the launcher starts
// os.Executable() with DISTBENCH_SPEC set, exactly as it starts distbench.
// DISTBENCH_TEST_DIE_RANK/AFTER make one worker die abruptly mid-run, and
// DISTBENCH_TEST_STOP_RANK/AFTER make one stop (SIGSTOP, as a debugger or a
// stuck process would), to test what its peers report.
func TestMain(m *testing.M) {
	if os.Getenv(harness.EnvSpec) != "" {
		if os.Getenv("DISTBENCH_TEST_DIE_RANK") == os.Getenv("RANK") {
			after, _ := time.ParseDuration(os.Getenv("DISTBENCH_TEST_DIE_AFTER"))
			go func() {
				time.Sleep(after)
				os.Exit(3)
			}()
		}
		if os.Getenv("DISTBENCH_TEST_STOP_RANK") == os.Getenv("RANK") {
			after, _ := time.ParseDuration(os.Getenv("DISTBENCH_TEST_STOP_AFTER"))
			go func() {
				time.Sleep(after)
				syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			}()
		}
		if err := harness.WorkerMain(context.Background(), os.Stdout, os.Getenv); err != nil {
			os.Stderr.WriteString("distbench: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
