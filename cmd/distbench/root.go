package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/launch"
	_ "github.com/distbench/distbench/strategies/all"
)

func newRootCmd(ctx context.Context, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "distbench",
		Short: "Benchmark how gradients travel: parameter server or allreduce, ring, tree or NCCL",
		Long: `distbench measures collective-communication strategies for distributed training
(ring and tree allreduce, a gRPC parameter server, NCCL) through one API
modelled on torch.distributed, on loopback or under mpirun, srun or Kubernetes.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(debug.ReadBuildInfo()),
	}
	root.SetVersionTemplate(versionTemplate)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%s%w (see '%s --help')", subcommand(c), err, c.CommandPath())}
	})
	// A rank started by an external launcher runs only on a real secret,
	// checked before anything starts: one line, exit 2.
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if fl := c.Flags().Lookup("launcher"); fl != nil && fl.Value.String() == "env" {
			if _, err := launch.Token(os.Getenv); err != nil {
				return usageError{fmt.Errorf("--launcher env: %w", err)}
			}
		}
		return nil
	}
	root.AddCommand(newRunCmd(stdout, stderr), newTrainCmd(stdout, stderr), newStrategiesCmd(stdout), newWorkerCmd(stdout),
		newSweepCmd(stdout, stderr), newReportCmd(stdout), newCompareCmd(stdout), newABCmd(stdout, stderr), newSoakCmd(stdout, stderr),
		newVersionCmd(stdout), newP2PCmd(stdout, stderr), newOSUCmd(stdout, stderr), newModelCmd(stdout), newGPUCheckCmd(stdout), newDoctorCmd(stdout), newExportCmd(stdout))
	registerCompletions(root)
	return root
}

// isCobraUsage recognises cobra's own argument errors (unknown command, wrong
// number of arguments), which are bad input too.
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "accepts ") ||
		strings.HasPrefix(s, "requires ") || strings.Contains(s, "unknown flag") ||
		strings.Contains(s, "unknown shorthand flag")
}

// cobraUsage makes one of cobra's argument errors a usage error of one line,
// naming the command as flag errors do: cobra appends its suggestions for a
// misspelt command on lines of their own.
func cobraUsage(c *cobra.Command, err error) error {
	msg, hint, _ := strings.Cut(err.Error(), "\n\nDid you mean this?\n")
	if names := strings.Fields(hint); len(names) > 0 {
		msg += "; did you mean " + strings.Join(names, " or ") + "?"
	}
	if !strings.HasPrefix(msg, "unknown command") { // which already names it
		msg = subcommand(c) + msg
	}
	return usagef("%s (see '%s --help')", msg, c.CommandPath())
}

// subcommand is "run: " for distbench run, and "" for distbench itself,
// whose name the error's one prefix already gives.
func subcommand(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") + ": "
}

func newStrategiesCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "strategies",
		Short: "List the registered strategies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range collective.Strategies() {
				st, _ := collective.Lookup(name)
				desc := ""
				if d, ok := st.(collective.Describer); ok {
					desc = d.Description()
				}
				if a, ok := st.(collective.Availability); ok {
					if err := a.Available(); err != nil {
						desc += " [unavailable here: " + err.Error() + "]"
					}
				}
				fmt.Fprintf(stdout, "%-8s %s\n", name, desc)
			}
			return nil
		},
	}
}

// newWorkerCmd is what launchers start: one rank (or server) of a job
// described by DISTBENCH_* environment variables.
func newWorkerCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Run one rank of a job (started by distbench's launcher, or by mpirun/srun with DISTBENCH_SPEC set)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return harness.WorkerMain(cmd.Context(), stdout, os.Getenv)
		},
	}
}
