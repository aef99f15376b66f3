package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/results"
)

// version says which build this is, for --version and the version command:
// the module version (a tag or pseudo-version: go install's, or the one Go
// derives from a checkout's tags; (devel) without VCS), the commit, as
// results record it, and the Go release.
func version(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		bi = nil
	}
	mod := "unknown"
	if bi != nil && bi.Main.Version != "" {
		mod = bi.Main.Version
	}
	commit := "commit " + results.BuildCommit(bi)
	if tag, ok := strings.CutPrefix(commit, "commit tag "); ok {
		commit = "the commit of tag " + tag // go install of a release: the proxy's zip has no VCS stamp
	}
	return fmt.Sprintf("%s, %s, %s", mod, commit, runtime.Version())
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
