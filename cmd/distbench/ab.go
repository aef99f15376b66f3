package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// DefaultABRounds is how many paired rounds ab measures unless told: the
// sign test needs 6 to reach p < 0.05 at all, and a point's gate shrinks
// with the square root of its pairs (docs/guide/ab.md).
const DefaultABRounds = 16

// DefaultABRoundIters is how many timed iterations ab gives each point in
// each round unless --iters says otherwise: a pair's two medians are
// over this many samples, and the launch around them costs more than they
// do. Three a round (the default plan's 20 split 16 ways, at least 3)
// left gates half again as wide (docs/guide/ab.md).
const DefaultABRoundIters = 10

type abFlags struct {
	pair    string
	sweep   sweepFlags
	compare compareFlags
}

func newABCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &abFlags{}
	cmd := &cobra.Command{
		Use:   "ab BASE_BIN NEW_BIN",
		Short: "Measure two builds interleaved, round by round, and compare them paired; exit 1 on a regression",
		Long: `ab is the regression gate for a shared or noisy machine. It measures a plan
(the default plan's collectives unless given --plan or flags) with two
distbench binaries at once: every launch of every round runs once with
BASE_BIN's workers and once with NEW_BIN's, back to back, the order
alternating, so that whatever load the machine has reaches both builds
alike. It then compares them pair by pair: each round gives one ratio of
NEW's median time to BASE's. A point regressed when the median ratio grew
by more than its gate, and most pairs agree (sign test, p < --alpha). The
gate is the smallest change the point could detect: --threshold, or a
robust t test's critical value (at --alpha divided among the points)
times the median ratio's standard error, whichever is larger. Two
separate sweeps on a busy 2-core machine differ by 20% or more between
runs of the same build; paired rounds cancel what the two builds share.

Each build's records go to OUT/base and OUT/new, ordinary run directories
(distbench report works on each); OUT/compare.md and OUT/plots/compare.png
hold the comparison, OUT/verdict.json its verdict for machines
(docs/guide/ci.md), and a markdown summary is printed. Training runs and
peers are left out: they have no rounds to pair. The plan runs in
--rounds rounds (default 16; at least 6) of 10 timed iterations each
(--iters gives the total, split across the rounds), without the plan's
time budget. By default every point is its
own pair of launches (--pair point): its two measurements a fraction of a
second apart, and its noise its own, so that a size band pools
independent pairs; --pair launch pairs the plan's launches whole, faster
but looser.

Exit status: 1 when a point regressed (or, with --missing-is-regression, on
by default here, failed in NEW only); 3 when none did but some were too
noisy to judge (their gate is above --max-gate); 0 when every point was
judged and none regressed; 2 on bad input; 130 when interrupted.`,
		Example: `  git stash && make build && cp bin/distbench /tmp/base && git stash pop && make build
  distbench ab /tmp/base bin/distbench
  distbench ab /tmp/base bin/distbench --strategy ring --np 2,4 --sizes 1MiB,16MiB --rounds 10
  distbench ab /tmp/base bin/distbench --plan plans/ci.yaml --threshold 10% --out runs/ab-ci`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAB(cmd, args[0], args[1], f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	s := &f.sweep
	fl.StringVar(&s.plan, "plan", "", "plan file (YAML); see harness/plan/default.yaml")
	fl.StringVar(&s.out, "out", "", "directory to create for both builds' runs and the comparison (default runs/ab-<timestamp>)")
	fl.BoolVar(&s.dryRun, "dry-run", false, "validate and print the plan's launches and points (each runs once per build), and measure nothing")
	fl.BoolVar(&s.skipUnavail, "skip-unavailable", false, "leave out what cannot run here (a strategy) instead of recording it as failed")
	s.addPlanFlags(fl)
	fl.StringVar(&f.pair, "pair", "point", "what a pair of measurements is: point (each point a launch per build, back to back) or launch (each launch of the plan, all its points, per build: faster, looser pairs)")
	c := &f.compare
	def := reports.DefaultCompareOptions()
	fl.StringVar(&c.threshold, "threshold", fmt.Sprintf("%g%%", 100*def.Threshold), "smallest change of the median ratio that counts: 5% or 0.05")
	fl.Float64Var(&c.alpha, "alpha", def.Alpha, "significance level, in (0, 1): of the whole run for the gate (divided among the points), of each point for the sign test")
	fl.BoolVar(&c.missing, "missing-is-regression", true, "count a point that BASE measured and NEW failed or lacks as a regression")
	fl.StringVar(&c.maxGate, "max-gate", fmt.Sprintf("%g%%", 100*reports.DefaultMaxGate), "largest gate (threshold raised by a point's noise) at which a point may be called unchanged; above it, too noisy to judge; 0% disables")
	return cmd
}

// abBinary checks that path is an executable file and returns it absolute,
// so that the workers start the same binary whatever their directory.
func abBinary(arg, path string) (string, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s %s: %v (want a distbench binary, e.g. bin/distbench)", arg, path, errors.Unwrap(err))
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s %s: not an executable file (want a distbench binary, e.g. bin/distbench)", arg, path)
	}
	return filepath.Abs(path)
}

func runAB(cmd *cobra.Command, baseBin, newBin string, f *abFlags, stdout, stderr io.Writer) error {
	var bins [2]string
	for k, a := range []struct{ name, path string }{{"BASE_BIN", baseBin}, {"NEW_BIN", newBin}} {
		abs, err := abBinary(a.name, a.path)
		if err != nil {
			return usageError{err}
		}
		bins[k] = abs
	}
	if f.pair != "point" && f.pair != "launch" {
		return usagef("--pair %q: want point or launch", f.pair)
	}
	opts, err := f.compare.options()
	if err != nil {
		return usageError{err}
	}
	s := &f.sweep
	if s.out == "" {
		s.out = filepath.Join("runs", "ab-"+time.Now().Format("20060102-150405"))
	}
	if exists(filepath.Join(s.out, "base", results.FileName)) {
		return usagef("--out %s already holds an A/B run: choose another directory", s.out)
	}
	p, dir, err := s.build(cmd)
	if err != nil {
		return usageError{err}
	}
	if !cmd.Flags().Changed("rounds") {
		p.Rounds = DefaultABRounds
	} else if s.rounds < reports.MinPairs {
		return usagef("--rounds %d: ab needs at least %d paired rounds to judge a point (default %d)", s.rounds, reports.MinPairs, DefaultABRounds)
	}
	// The plan's iterations are a sweep's, split across its rounds; ab's
	// rounds are its replicates, each worth its own samples, and a time
	// budget would give the two builds of a pair different counts.
	if !cmd.Flags().Changed("iters") {
		p.Iters = DefaultABRoundIters * int(p.Rounds)
		for i := range p.Collectives {
			p.Collectives[i].Iters = 0
		}
	}
	if !cmd.Flags().Changed("time-budget") {
		p.TimeBudget = 0
	}
	if len(p.Collectives)+len(p.Gradients) == 0 {
		return usagef("the plan has no collective points (collectives or gradients blocks): ab compares collectives; training and peers are left out")
	}
	var left []string
	if n := len(p.Training); n > 0 {
		left = append(left, plural(n, "training block"))
		p.Training = nil
	}
	if len(p.Peers) > 0 {
		left = append(left, "peers "+strings.Join(p.Peers, ", "))
		p.Peers = nil
	}
	exp, err := p.Expand()
	if err != nil {
		return usageError{err}
	}
	if len(left) > 0 {
		fmt.Fprintf(stdout, "ab: left out %s: they have no rounds to pair\n", strings.Join(left, " and "))
	}
	if s.dryRun {
		printPlan(stdout, exp)
		return nil
	}
	prog := newProgress(stdout, stderr)
	launches := 2 * exp.NumLaunches()
	if f.pair == "point" {
		launches = 2 * exp.NumMeasurements()
	}
	fmt.Fprintf(stdout, "distbench ab: %s × 2 builds in %s%s into %s\n  base %s\n  new  %s\n",
		plural(exp.NumPoints(), "point"), plural(launches, "launch"), inRounds(exp), dir, bins[0], bins[1])
	res, err := harness.AB(cmd.Context(), harness.ABOptions{
		Plan: exp, Dir: dir, Env: results.CaptureEnv(),
		Base: harness.ABBuild{Name: "base", Exe: bins[0]}, New: harness.ABBuild{Name: "new", Exe: bins[1]},
		Args: []string{"worker"}, Progress: prog, PerPoint: f.pair == "point",
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "distbench ab: base %s; new %s; in %s\n", summary(&res.Base), summary(&res.New), results.FormatDuration(res.Elapsed))
	c, err := reports.PairedCompare(filepath.Join(dir, "base"), filepath.Join(dir, "new"), opts)
	if err != nil {
		return err
	}
	if err := c.WriteReport(dir); err != nil {
		return err
	}
	if err := c.WriteVerdict(dir, res.Interrupted); err != nil {
		return err
	}
	writeCompareSummary(stdout, c, filepath.Join(dir, reports.CompareFile))
	if res.Interrupted {
		fmt.Fprintf(stderr, "distbench: ab interrupted; the comparison covers the rounds both builds finished\n")
		return exitError{exitInterrupted}
	}
	if _, code := c.Outcome(); code != 0 {
		return exitError{code}
	}
	return nil
}
