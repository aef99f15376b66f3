package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

func newReportCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Write RUN_DIR/report.md (and its plots) from RUN_DIR/results.jsonl",
		Long: `report reads a run directory's results.jsonl, of a finished, interrupted or
still running sweep, and writes report.md with its plots in plots/. It
prints the report's path.`,
		Example: "  distbench report runs/20260101-120000",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := checkRunDir(dir); err != nil {
				return usageError{err}
			}
			// A damaged results file is bad input, as compare says too:
			// exit 2. Failing to write the report is not.
			if _, err := results.ReadRun(dir); err != nil {
				return usageError{err}
			}
			if err := reports.Generate(dir); err != nil {
				return err
			}
			fmt.Fprintln(stdout, filepath.Join(dir, reports.ReportFile))
			return nil
		},
	}
}

// checkRunDir says, in one line, why dir is not a run directory.
func checkRunDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: no such run directory", dir)
	case !st.IsDir():
		return fmt.Errorf("%s: not a directory (want a run directory holding %s)", dir, results.FileName)
	}
	if _, err := os.Stat(filepath.Join(dir, results.FileName)); err != nil {
		return fmt.Errorf("%s: no %s: not a run directory (distbench sweep --out %s makes one)", dir, results.FileName, dir)
	}
	return nil
}
