package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/results"
)

func newExportCmd(stdout io.Writer) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export bench|csv RUN",
		Short: "Write a run's results as Go benchmark format (for benchstat) or CSV",
		Long: `export reads a run's results (RUN is a run directory holding results.jsonl,
as sweep, ab and run --json DIR/results.jsonl make, or a results file by
any name, as run --json out.json writes) and writes them to stdout (or -o):

  bench  the Go benchmark format (golang.org/design/14313-benchmark-format):
         one line per sample of each measured collective point, ns/op with
         busbw-B/s and algbw-B/s, for benchstat old.txt new.txt
  csv    one row per record (points, training steps and epochs), with a
         header: times in µs, bandwidths in GB/s, status ok, incomplete or
         failed

A failed or interrupted run exports what it recorded.`,
		Example: `  distbench export bench runs/20260101-120000 > new.txt && benchstat old.txt new.txt
  distbench run --np 4 -b 1MiB -e 64MiB --json out.json && distbench export csv out.json -o out.csv`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(args[0], args[1], out, stdout)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func runExport(format, src, out string, stdout io.Writer) error {
	write := map[string]func(io.Writer, *results.Run) error{"bench": results.WriteBench, "csv": results.WriteCSV}[format]
	if write == nil {
		return usagef("export %q: want bench or csv", format)
	}
	st, err := os.Stat(src)
	if err != nil {
		return usagef("export: %s: no such run directory or results file", src)
	}
	read := results.ReadRunFile
	if st.IsDir() {
		if err := checkRunDir(src); err != nil {
			return usageError{err}
		}
		read = results.ReadRun
	}
	run, err := read(src)
	if err != nil {
		return usageError{fmt.Errorf("export: %w", err)}
	}
	w := stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return usageError{fmt.Errorf("export -o: %w", err)}
		}
		defer f.Close()
		w = f
	}
	if err := write(w, run); err != nil {
		return err
	}
	if f, ok := w.(*os.File); ok && out != "" {
		return f.Close()
	}
	return nil
}
