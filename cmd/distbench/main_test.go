package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/launch"
)

// envLaunch makes the test binary a launcher: TestMain runs the CLI with the
// arguments it holds, a JSON list.
const envLaunch = "DISTBENCH_TEST_LAUNCH"

// envArgv makes the test binary distbench itself, its arguments the CLI's:
// what a job engine runs when a test hands it the test binary.
const envArgv = "DISTBENCH_TEST_ARGV"

// TestMain lets the test binary be its own worker: the launcher starts
// os.Executable() with DISTBENCH_SPEC set, exactly as it starts distbench.
// DISTBENCH_TEST_DIE_RANK/AFTER make one worker die abruptly mid-run, and
// DISTBENCH_TEST_STOP_RANK/AFTER make one stop (SIGSTOP, as a debugger or a
// stuck process would), to test what its peers report. With envLaunch set it
// is a launcher instead, a process a test can kill.
func TestMain(m *testing.M) {
	if os.Getenv(envArgv) == "1" && os.Getenv(launch.EnvSpec) == "" {
		// Started by an engine (mpirun, a stand-in srun) as distbench,
		// stopped by its signals as main is; DISTBENCH_TEST_DIE_RANK
		// (SLURM_PROCID here) dies as a worker would.
		if r := os.Getenv("SLURM_PROCID"); r != "" && os.Getenv("DISTBENCH_TEST_DIE_RANK") == r {
			after, _ := time.ParseDuration(os.Getenv("DISTBENCH_TEST_DIE_AFTER"))
			go func() {
				time.Sleep(after)
				os.Exit(3)
			}()
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
		stop()
		os.Exit(code)
	}
	if args := os.Getenv(envLaunch); args != "" && os.Getenv(launch.EnvSpec) == "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", envLaunch, err)
			os.Exit(2)
		}
		os.Exit(run(context.Background(), os.Stdout, os.Stderr, argv))
	}
	if os.Getenv(launch.EnvSpec) != "" {
		// Servers have no RANK: the hooks are for workers only.
		rank := os.Getenv("RANK")
		if rank != "" && os.Getenv("DISTBENCH_TEST_DIE_RANK") == rank {
			after, _ := time.ParseDuration(os.Getenv("DISTBENCH_TEST_DIE_AFTER"))
			go func() {
				time.Sleep(after)
				os.Exit(3)
			}()
		}
		if rank != "" && os.Getenv("DISTBENCH_TEST_STOP_RANK") == rank {
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
