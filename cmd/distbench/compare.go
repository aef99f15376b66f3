package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/reports"
)

// maxSummaryRows caps each table of compare's stdout summary; compare.md
// has them all.
const maxSummaryRows = 15

type compareFlags struct {
	threshold, out string
	maxGate        string
	alpha          float64
	missing        bool
	ignoreLink     bool
	noise          float64
	paired         bool
}

func newCompareCmd(stdout io.Writer) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two run directories; exit 1 when a point regressed",
		Long: `compare matches the points of two runs and tests each for a change of its
median time (Mann-Whitney U over the per-iteration samples, as benchstat
does). A point regressed when it got slower by more than --threshold, and
by more than --noise-factor times its own spread, with p < --alpha. Where
both runs measured a point in at least 3 rounds (sweep --rounds; the
default plan does), the change must also hold across rounds: the median of
the round medians must change by more than the threshold too, and the
threshold covers the spread between round medians as well. compare writes
compare.md, plots/compare.png and verdict.json (the verdict for machines,
docs/guide/ci.md) into its own directory (--out, default
runs/compare-<timestamp>; never into the runs it reads), prints a short
markdown summary, and exits 1 when any point regressed, 3 when none did but
some were too noisy to judge (their gate, the threshold raised by their
noise, is above --max-gate: a change that size would have gone unseen), 0
when every point was judged and none regressed, and 2 on bad input.`,
		Example: `  distbench compare baseline runs/20260101-120000
  distbench compare baseline new --threshold 10% --alpha 0.01 --out /tmp/cmp`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(args[0], args[1], f, stdout)
		},
	}
	fl := cmd.Flags()
	def := reports.DefaultCompareOptions()
	fl.StringVar(&f.threshold, "threshold", fmt.Sprintf("%g%%", 100*def.Threshold), "smallest change of the median time that counts: 5% or 0.05")
	fl.Float64Var(&f.alpha, "alpha", def.Alpha, "significance level of the test, in (0, 1)")
	fl.StringVar(&f.out, "out", "", "directory for compare.md, its plot and verdict.json (default runs/compare-<timestamp>)")
	fl.BoolVar(&f.missing, "missing-is-regression", false, "count a point that BASE measured and NEW lacks or failed as a regression (for CI)")
	fl.BoolVar(&f.ignoreLink, "ignore-link", false, "match points regardless of network shaping (automatic when each run has one link and they differ)")
	fl.Float64Var(&f.noise, "noise-factor", reports.DefaultNoiseFactor, "a change must also exceed this many times the point's own robust spread; negative disables")
	fl.BoolVar(&f.paired, "paired", false, "BASE and NEW are the two builds of an A/B run (distbench ab: OUT/base, OUT/new): compare them round by round")
	fl.StringVar(&f.maxGate, "max-gate", fmt.Sprintf("%g%%", 100*reports.DefaultMaxGate), "largest gate (threshold raised by a point's noise) at which a point may be called unchanged; above it, too noisy to judge; 0% disables")
	return cmd
}

// parseThreshold reads "5%" or "0.05". A bare number above 1 is refused:
// "5" could mean 5% or 500%.
func parseThreshold(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("--threshold %q: want a percentage such as 5%% or a fraction such as 0.05", s)
	}
	if pct {
		return v / 100, nil
	}
	if v > 1 {
		return 0, fmt.Errorf("--threshold %s: a fraction above 1; write %s%% for percent, or %g for %g%%", s, s, v/100, v)
	}
	return v, nil
}

// options are the comparison options the flags give.
func (f *compareFlags) options() (reports.CompareOptions, error) {
	thr, err := parseThreshold(f.threshold)
	if err != nil {
		return reports.CompareOptions{}, err
	}
	if !(f.alpha > 0 && f.alpha < 1) {
		return reports.CompareOptions{}, fmt.Errorf("--alpha %v: must be in (0, 1)", f.alpha)
	}
	gate, err := parseThreshold(f.maxGate)
	if err != nil {
		return reports.CompareOptions{}, fmt.Errorf("--max-gate: %w", err)
	}
	if gate == 0 {
		gate = -1 // disabled
	}
	return reports.CompareOptions{Threshold: thr, Alpha: f.alpha, MissingIsRegression: f.missing,
		IgnoreLink: f.ignoreLink, NoiseFactor: f.noise, MaxGate: gate}, nil
}

func runCompare(base, nw string, f *compareFlags, stdout io.Writer) error {
	o, err := f.options()
	if err != nil {
		return usageError{err}
	}
	for _, d := range []string{base, nw} {
		if err := checkRunDir(d); err != nil {
			return usageError{err}
		}
	}
	compare := reports.Compare
	if f.paired {
		compare = reports.PairedCompare
	}
	c, err := compare(base, nw, o)
	if err != nil {
		// Compare only reads: what it refuses is the input (a damaged
		// file, a newer schema).
		return usageError{err}
	}
	out := f.out
	if out == "" {
		out = filepath.Join("runs", "compare-"+time.Now().Format("20060102-150405"))
	}
	if err := c.WriteReport(out); err != nil {
		return err
	}
	if err := c.WriteVerdict(out, false); err != nil {
		return err
	}
	writeCompareSummary(stdout, c, filepath.Join(out, reports.CompareFile))
	if _, code := c.Outcome(); code != 0 {
		return exitError{code}
	}
	return nil
}

// writeCompareSummary prints the verdict in markdown: a CI job can paste it
// into a pull-request comment as it is.
func writeCompareSummary(w io.Writer, c *reports.Comparison, full string) {
	o := c.Options
	cmd := "compare"
	if c.Paired {
		cmd = "ab"
	}
	fmt.Fprintf(w, "## distbench %s: %s → %s\n\n", cmd, c.BaseDir, c.NewDir)
	regs := c.Regressions()
	head := fmt.Sprintf("**%d regression(s)**", len(regs))
	if len(regs) == 0 {
		head = "**No regressions**"
	}
	fmt.Fprintf(w, "%s: %d better, %d unchanged, %d too noisy to judge, %d missing, of %d points (threshold %g%%, α = %g).\n",
		head, c.Count(reports.Better), c.Count(reports.Same), c.Count(reports.TooNoisy), c.Count(reports.Missing), len(c.Points), 100*o.Threshold, o.Alpha)
	if t := c.TooNoisyText(); t != "" {
		fmt.Fprintf(w, "\n%s\n", t)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "\nNote: %s.\n", n)
	}
	var better []reports.PointComparison
	for _, p := range c.Points {
		if p.Verdict == reports.Better {
			better = append(better, p)
		}
	}
	if len(c.Bands) > 0 {
		fmt.Fprintf(w, "\n### Size bands\n\n")
		if err := c.WriteBands(w); err != nil {
			fmt.Fprintf(w, "(bands: %v)\n", err)
		}
	}
	summaryTable(w, "Regressions", regs)
	summaryTable(w, "Improvements", better)
	fmt.Fprintf(w, "\nFull report: %s (verdict for machines: %s)\n", full, filepath.Join(filepath.Dir(full), reports.VerdictFile))
}

func summaryTable(w io.Writer, title string, ps []reports.PointComparison) {
	if len(ps) == 0 {
		return
	}
	// A rounds column where the points were measured in rounds: the
	// change of the median of round medians, which had to count too.
	rounds := slices.ContainsFunc(ps, func(p reports.PointComparison) bool { return !math.IsNaN(p.RoundChange) })
	head, rule, more := "| point | base (µs) | new (µs) | change | 95% CI | p |", "|---|--:|--:|--:|--:|--:|", "| | | | | |"
	if rounds {
		head, rule, more = head+" rounds |", rule+"--:|", more+" |"
	}
	fmt.Fprintf(w, "\n### %s\n\n%s\n%s\n", title, head, rule)
	for i, p := range ps {
		if i == maxSummaryRows {
			fmt.Fprintf(w, "| … and %d more %s\n", len(ps)-i, more)
			break
		}
		ci := "—"
		if !math.IsNaN(p.ChangeLo) {
			ci = fmt.Sprintf("[%+.1f%%, %+.1f%%]", 100*p.ChangeLo, 100*p.ChangeHi)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %+.1f%% | %s | %.3g |", p.Name, p.BaseMedianUs, p.NewMedianUs, 100*p.Change, ci, p.P)
		if rounds {
			rc := "—"
			if !math.IsNaN(p.RoundChange) {
				rc = fmt.Sprintf("%d+%d: %+.1f%%", p.BaseRounds, p.NewRounds, 100*p.RoundChange)
			}
			fmt.Fprintf(w, " %s |", rc)
		}
		fmt.Fprintln(w)
	}
}
