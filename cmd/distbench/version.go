package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/results"
)

// version says which build this is, for --version and the version command:
// the module version (a tag or pseudo-version when installed with go
// install, (devel) when built in a checkout), the commit, as results
// record it, and the Go release.
func version(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		bi = nil
	}
	mod := "unknown"
	if bi != nil && bi.Main.Version != "" {
		mod = bi.Main.Version
	}
	return fmt.Sprintf("%s, commit %s, %s", mod, results.BuildCommit(bi), runtime.Version())
}

// versionTemplate is cobra's --version output, the version command's too.
const versionTemplate = "distbench version {{.Version}}\n"

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and commit of this build (as --version does)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(stdout, "distbench version %s\n", cmd.Root().Version)
			return err
		},
	}
}
