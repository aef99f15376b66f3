package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/results"
)

// RunFunc runs one rank (or server process) of spec; on rank 0, emit
// receives the records.
type RunFunc func(ctx context.Context, spec *job.Spec, getenv func(string) string, emit func(*results.Record) error) error

// Worker is the launched side of the protocol, a worker or server process's
// whole life around run: read the spec from the environment, exit with the
// launcher, bind to the CPUs and profile as asked, and hand rank 0's records
// back on stdout as RecordPrefix + JSON, one per line.
func Worker(ctx context.Context, stdout io.Writer, getenv func(string) string, run RunFunc) error {
	spec, err := specFromEnv(getenv)
	if err != nil {
		return err
	}
	err = watchLauncher(getenv, func() {
		who := "rank " + getenv("RANK")
		if idx := getenv(EnvServerIndex); idx != "" {
			who = "server " + idx
		}
		fmt.Fprintf(os.Stderr, "distbench: %s: the launcher that started it is gone; exiting\n", who)
		os.Exit(1)
	})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(stdout)
	emit := func(r *results.Record) error {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		bw.WriteString(RecordPrefix)
		bw.Write(b)
		bw.WriteByte('\n')
		return bw.Flush()
	}
	if cpus := getenv(EnvCPUs); cpus != "" && cpus != "none" {
		if err := bindToCPUs(cpus); err != nil {
			return err
		}
	}
	if prefix := getenv(EnvCPUProfile); prefix != "" {
		stop, err := startCPUProfile(fmt.Sprintf("%s.%s%s.pprof", prefix, roleName(getenv), getenv("RANK")))
		if err != nil {
			return err
		}
		defer stop()
	}
	return run(ctx, spec, getenv, emit)
}

// watchLauncher calls gone once the launcher that set EnvLauncherFD has
// exited: a worker must not outlive it, holding its cores and ports, when it
// is killed (kill -9 gives it no chance to stop its children). Linux also
// has the kernel kill them (dieWithLauncher); this works everywhere.
func watchLauncher(getenv func(string) string, gone func()) error {
	v := getenv(EnvLauncherFD)
	if v == "" {
		return nil // not started by the local launcher
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return fmt.Errorf("%s=%q: want the number of a file descriptor inherited from the launcher (3 or more)", EnvLauncherFD, v)
	}
	f := os.NewFile(uintptr(fd), "launcher pipe")
	if _, err := f.Stat(); err != nil {
		return fmt.Errorf("%s=%d: %w", EnvLauncherFD, fd, err)
	}
	go func() {
		// Nothing is ever written: the read ends at end of file, when the
		// launcher's end has closed with its process.
		io.Copy(io.Discard, f)
		gone()
	}()
	return nil
}

func roleName(getenv func(string) string) string {
	if idx := getenv(EnvServerIndex); idx != "" {
		return "server" + idx + "-"
	}
	return "rank"
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvCPUProfile, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", EnvCPUProfile, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
