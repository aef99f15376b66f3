package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/results"
)

// launchers are what --launcher accepts on run, sweep and train.
func launchers() []string { return append([]string{"local", "env"}, launch.Engines()...) }

func checkLauncher(name string, extra []string) error {
	if !slices.Contains(launchers(), name) {
		return fmt.Errorf("--launcher %q (accepted: %s)", name, strings.Join(launchers(), ", "))
	}
	if len(extra) > 0 && !slices.Contains(launch.Engines(), name) {
		return fmt.Errorf("--launcher-arg is for --launcher %s", strings.Join(launch.Engines(), " or "))
	}
	return nil
}

const launcherUsage = "local: start the ranks as processes here; env: this process is one rank started by mpirun, srun, torchrun or a Kubernetes Job; mpirun, srun: start the ranks through that engine (the line it runs is printed)"

// runEngine runs this command's ranks through mpirun or srun: np of them,
// each running the command again with --launcher env.
func runEngine(cmd *cobra.Command, engine string, np int, extra []string, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var args []string
	for _, a := range invocation(cmd)[1:] { // without the program's name
		switch {
		case strings.HasPrefix(a, "--launcher="):
			args = append(args, "--launcher=env")
		case strings.HasPrefix(a, "--launcher-arg="):
		default:
			args = append(args, a)
		}
	}
	e := launch.Engine{Name: engine, NP: np, Self: self, Args: args, Extra: extra}
	err = e.Run(cmd.Context(), stdout, stderr)
	var ee *launch.ExitError
	if errors.As(err, &ee) {
		// The ranks said what went wrong.
		return exitError{ee.Code}
	}
	return err
}

// planRanks is how many ranks a plan's largest launch needs, its workers
// and a parameter server's dedicated servers: the size of the allocation
// that sweeps it.
func planRanks(exp *plan.Expanded) int {
	n := 1
	for _, g := range exp.Groups {
		if g.Spec != nil {
			k, _ := harness.ServerProcesses(g.Spec.Strategy, g.Spec.Options, g.Spec.NP) // a bad option fails the launch itself
			n = max(n, g.Spec.NP+k)
		}
	}
	return n
}

// planTimeout is the longest operation deadline of a plan's launches.
func planTimeout(exp *plan.Expanded) time.Duration {
	t := time.Duration(0)
	for _, g := range exp.Groups {
		if g.Spec != nil {
			t = max(t, g.Spec.Timeout)
		}
	}
	if t == 0 {
		t = collective.DefaultTimeout
	}
	return t
}

// inAllocation runs a sweep as one rank of an engine's allocation. Rank 0
// runs the sweep, each launch on the allocation's first np ranks, and
// writes the run directory; the others follow it; the ranks after a
// launch's workers are its dedicated servers, if it has any. Launches that
// cannot run in the allocation (more ranks than it has, a reference peer,
// servers outside the mesh) are recorded as skipped, saying why.
func inAllocation(cmd *cobra.Command, exp *plan.Expanded, sweep func(harness.SweepOptions) error) error {
	ctx := cmd.Context()
	alloc, err := harness.JoinAllocation(ctx, os.Getenv, planTimeout(exp))
	if err != nil {
		return err
	}
	if alloc.Rank() != 0 {
		err := alloc.Follow(ctx)
		if eerr := alloc.End(ctx, err); err == nil {
			err = eerr
		}
		return err
	}
	for i := range exp.Groups {
		g := exp.Groups[i]
		switch {
		case g.Skip != "":
		case g.Peer != nil:
			g.Skip = "reference peers run only under the local launcher"
		case g.Spec != nil:
			g.Skip = alloc.Fits(g.Spec)
		}
	}
	err = sweep(harness.SweepOptions{Launch: alloc.Launch})
	if eerr := alloc.End(ctx, err); err == nil {
		err = eerr
	}
	return err
}

// isRank0 says whether this process prints and records: always under the
// local launcher and the engines distbench starts (it is not a rank); under
// --launcher env, only rank 0, while every rank runs the command.
func isRank0(launcher string) bool {
	if launcher != "env" {
		return true
	}
	info, err := rendezvous.FromEnv(os.Getenv)
	return err != nil || info.Rank == 0
}

// openRunJSON opens --json FILE with the records of a sweep's
// results.jsonl (an env record, the schema), so that report and compare
// read it too.
func openRunJSON(path string, spec *job.Spec, args []string) (*results.Writer, error) {
	env := results.CaptureEnv()
	env.Link = spec.Link
	env.Args = args
	for _, p := range spec.Points {
		env.Planned = append(env.Planned, spec.PointID(p))
	}
	// --json runs/x/results.jsonl makes a run directory that report,
	// compare and export read, as sweep's are.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, usageError{fmt.Errorf("--json: %w", err)}
	}
	w, err := results.NewFileWriter(path, env)
	if err != nil {
		return nil, usageError{fmt.Errorf("--json: %w", err)}
	}
	return w, nil
}
