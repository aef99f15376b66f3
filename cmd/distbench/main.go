// Command distbench measures how gradients travel: parameter server or
// allreduce, ring or tree or NCCL, on this cluster, at this scale.
//
//	distbench run --strategy ring --np 4 --collective allreduce -b 4KiB -e 64MiB -f 2 --check
//	distbench strategies
//
// See README.md, and docs/README.md for the user guide.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runAs(ctx, os.Stdout, os.Stderr, os.Args[0], os.Args[1:]))
}

// runAs is run under the name the binary was started as: under one of
// nccl-tests' program names (all_reduce_perf, ...) it is `distbench run
// --collective ...` with the same arguments.
func runAs(ctx context.Context, stdout, stderr io.Writer, argv0 string, args []string) int {
	args, _, err := asNCCLProgram(argv0, args)
	if err != nil {
		fmt.Fprintf(stderr, "distbench: %v\n", err)
		return 2
	}
	return run(ctx, stdout, stderr, args)
}

// usageError is bad input: reported in one line, exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError carries a chosen exit status without a message of its own (the
// command has already said what went wrong).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// run is the whole CLI, so tests drive it in-process.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	root := newRootCmd(ctx, stdout, stderr)
	if len(args) > 0 && args[0] == "run" {
		args = joinSeparatedValues(args) // nccl-tests' "--check 0"
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if !errors.As(err, &ue) && isCobraUsage(err) {
		err = cobraUsage(cmd, err)
	}
	// The one place that names the program: errors below say only where.
	fmt.Fprintf(stderr, "distbench: %v\n", err)
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// parseOpts reads repeated --opt key=value flags; nil when there are none.
func parseOpts(kvs []string) (map[string]string, error) {
	var opts map[string]string
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--opt %q: want key=value", kv)
		}
		if opts == nil {
			opts = map[string]string{}
		}
		opts[k] = v
	}
	return opts, nil
}
