package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/reports/osu"
	"github.com/distbench/distbench/results"
)

type osuFlags struct {
	test                      osu.CollTest
	strategy, sizes, jsonPath string
	link, launcher            string
	np, iters, warmup         int
	itersSet, warmupSet, full bool
	check                     bool
	timeout                   time.Duration
	opts                      []string
}

func newOSUCmd(stdout, stderr io.Writer) *cobra.Command {
	var names []string
	for _, t := range osu.CollTests {
		names = append(names, t.Name)
	}
	cmd := &cobra.Command{
		Use:   "osu",
		Short: "Collective latency as OSU's osu_allreduce, osu_allgather, ... print it",
		Long: `osu measures one collective with OSU micro-benchmarks' definitions (v7.4) and
prints OSU's table: "# Size  Avg Latency(us)", and with -f the Min, Max and
Iterations columns, so that figures can be set beside osu_allreduce's and its
siblings'. (For point-to-point latency and bandwidth, see 'distbench p2p'.)

OSU's definitions: every rank times its own calls and takes its mean over the
timed iterations; Avg Latency is the mean of those means over ranks, Min and
Max the least and the most. Sizes are OSU's: what each rank contributes for
allgather, alltoall, gather and scatter (distbench's run and sweep name the
larger buffer instead), the buffer for the others; the reductions run on
float32 (OSU's MPI_FLOAT), the others on bytes.

Where distbench differs from OSU: -m also takes units (4KiB:1MiB); --check
(on by default) checks one untimed run per size before the warm-up; --json
records also carry distbench's own statistics (the median over iterations of
the slowest rank's time, its confidence interval).

Tests: ` + strings.Join(names, ", ") + ".",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("osu: name a collective: %s (see 'distbench osu --help')", strings.Join(names, ", "))
			}
			return usagef("osu: unknown collective %q (accepted: %s)", args[0], strings.Join(names, ", "))
		},
		RunE: func(*cobra.Command, []string) error { return nil }, // Args refuses every call
	}
	for _, t := range osu.CollTests {
		cmd.AddCommand(newOSUTestCmd(t, stdout, stderr))
	}
	return cmd
}

func newOSUTestCmd(t osu.CollTest, stdout, stderr io.Writer) *cobra.Command {
	f := &osuFlags{test: t}
	cmd := &cobra.Command{
		Use:     t.Name,
		Aliases: []string{t.Program, t.Collective},
		Short:   "OSU's " + t.Program + ": " + strings.ToLower(t.Title),
		Example: fmt.Sprintf(`  distbench osu %s --np 4 -f
  distbench osu %s --strategy tree --np 8 -m 4:65536 --link 10g
  mpirun -n 4 -x DISTBENCH_TOKEN -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500 distbench osu %s --launcher env`, t.Name, t.Name, t.Name),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			f.itersSet, f.warmupSet = fl.Changed("iterations"), fl.Changed("warmup")
			if f.launcher == "env" {
				opts, err := parseOpts(f.opts)
				if err != nil {
					return usageError{err}
				}
				n, err := harness.EngineNP(os.Getenv, f.strategy, opts, f.np, fl.Changed("np"))
				if err != nil {
					return usageError{err}
				}
				f.np = n
			}
			specs, err := f.specs()
			if err != nil {
				return usageError{err}
			}
			localRanks := f.np
			if f.launcher == "env" {
				localRanks = 1
			}
			for _, s := range specs {
				if err := s.CheckMemory(localRanks); err != nil {
					return usageError{err}
				}
			}
			return runOSU(cmd, specs, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.sizes, "message-size", "m", "", fmt.Sprintf("sizes MIN:MAX in bytes (or MAX, MIN:, :MAX; units accepted), doubling from MIN (default: OSU's 1:%d)", osu.CollMaxSize))
	fl.IntVarP(&f.iters, "iterations", "i", 0, fmt.Sprintf("timed iterations of every size (default: OSU's %d, %d above %d bytes)", osu.CollIters, osu.CollItersLarge, osu.LargeSize))
	fl.IntVarP(&f.warmup, "warmup", "x", 0, fmt.Sprintf("untimed warm-up iterations of every size (default: OSU's %d, %d above %d bytes)", osu.CollSkip, osu.CollSkipLarge, osu.LargeSize))
	fl.BoolVarP(&f.full, "full", "f", false, "print the Min Latency, Max Latency and Iterations columns too")
	fl.StringVar(&f.strategy, "strategy", "ring", "strategy to measure (see 'distbench strategies')")
	fl.IntVar(&f.np, "np", 2, "number of ranks (local worker processes)")
	fl.BoolVarP(&f.check, "check", "c", true, "check one untimed run per size on exactly reducible inputs (any wrong element fails the run)")
	fl.StringVar(&f.jsonPath, "json", "", "append one JSON record per size to this file (JSON Lines, readable by report and compare)")
	fl.DurationVar(&f.timeout, "timeout", collective.DefaultTimeout, "deadline of every operation")
	fl.StringVar(&f.link, "link", "", "shape every rank's NIC, e.g. 10Gbit,25us or a preset (1g, 10g, 25g, 100g, lan, wan)")
	fl.StringArrayVar(&f.opts, "opt", nil, "strategy option key=value (repeatable)")
	fl.StringVar(&f.launcher, "launcher", "local", "local: start --np worker processes here; env: this process is one rank started by mpirun, srun or a Kubernetes Job")
	return cmd
}

// osuSpec is one job of the test, and OSU's size of each of its points.
type osuSpec struct {
	*job.Spec
	sizes []int64
}

// specs builds the test's jobs: one point per OSU size, the sizes up to
// osu.LargeSize in one job and those above in another, since OSU gives
// them different iterations and distbench's collective jobs take one
// count for all their points (-i and -x set both).
func (f *osuFlags) specs() ([]osuSpec, error) {
	small, large, err := f.spec()
	if err != nil {
		return nil, err
	}
	var out []osuSpec
	for _, s := range []osuSpec{small, large} {
		if len(s.Points) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}

// refuse refuses flags OSU's collective tests cannot run with.
func (f *osuFlags) refuse() error {
	if _, err := collective.Lookup(f.strategy); err != nil {
		return err
	}
	switch {
	case f.np < 2:
		return fmt.Errorf("--np %d: OSU's collective tests need at least 2 processes", f.np)
	case f.launcher != "local" && f.launcher != "env":
		return fmt.Errorf("--launcher %q (accepted: local, env)", f.launcher)
	case f.timeout < job.MinTimeout:
		return fmt.Errorf("--timeout %v: too short (accepted: %v or more)", f.timeout, job.MinTimeout)
	case f.itersSet && f.iters < 1:
		return fmt.Errorf("-i %d: must be at least 1", f.iters)
	case f.warmupSet && f.warmup < 0:
		return fmt.Errorf("-x %d: must be 0 or more", f.warmup)
	}
	return nil
}

func (f *osuFlags) spec() (small, large osuSpec, err error) {
	t := f.test
	if err := f.refuse(); err != nil {
		return small, large, err
	}
	dt, err := collective.ParseDType(t.DType)
	if err != nil {
		return small, large, err
	}
	elem := int64(dt.Size())
	lo, hi, err := parseMessageSizes(f.sizes, 1, osu.CollMaxSize)
	if err != nil {
		return small, large, err
	}
	var sizes []int64
	for _, s := range osu.Sizes(lo, hi) {
		if s/elem == 0 {
			continue // no elements: skipped, as OSU skips them
		}
		if t.Collective == "reducescatter" && s/elem < int64(f.np) {
			continue // less than an element a rank
		}
		sizes = append(sizes, s)
	}
	if len(sizes) == 0 {
		return small, large, fmt.Errorf("-m %q: no size to measure (accepted: a MAX of at least %d bytes, an element of %s a rank)", f.sizes, elem, dt)
	}
	opts, err := parseOpts(f.opts)
	if err != nil {
		return small, large, err
	}
	newSpec := func(iters, warmup int) osuSpec {
		if f.itersSet {
			iters = f.iters
		}
		if f.warmupSet {
			warmup = f.warmup
		}
		return osuSpec{Spec: &job.Spec{Strategy: f.strategy, NP: f.np, Options: opts, Link: f.link, Timeout: f.timeout,
			Iters: iters, Warmup: warmup, Check: f.check, KeepSamples: true}}
	}
	small, large = newSpec(osu.CollIters, osu.CollSkip), newSpec(osu.CollItersLarge, osu.CollSkipLarge)
	op := ""
	if tr, _ := job.TraitsOf(t.Collective); tr.Reduces {
		op = "sum"
	}
	for _, s := range sizes {
		bytes := s / elem * elem
		if t.PerRank {
			bytes *= int64(f.np) // distbench's sizes name the larger buffer
		}
		into := &small
		if s > osu.LargeSize {
			into = &large
		}
		into.Points = append(into.Points, job.Point{Collective: t.Collective, Bytes: bytes, DType: dt.String(), Op: op})
		into.sizes = append(into.sizes, s)
	}
	for _, s := range []osuSpec{small, large} {
		if len(s.Points) > 0 {
			if err := s.Validate(); err != nil {
				return small, large, err
			}
		}
	}
	return small, large, nil
}

func runOSU(cmd *cobra.Command, specs []osuSpec, f *osuFlags, stdout, stderr io.Writer) error {
	rank0 := isRank0(f.launcher)
	var jsonOut *results.Writer
	if f.jsonPath != "" && rank0 {
		var err error
		if jsonOut, err = openRunJSON(f.jsonPath, specs[0].Spec, nil); err != nil {
			return err
		}
		defer jsonOut.Close()
	}
	out := stdout
	if !rank0 {
		out = io.Discard
	}
	w := bufio.NewWriter(out)
	osu.WriteCollHeader(w, osu.CollHeader{Test: f.test, Strategy: f.strategy, Link: f.link, NP: f.np, Full: f.full})
	w.Flush()
	osuSize := map[int64]int64{} // distbench's bytes → OSU's size
	for _, s := range specs {
		for i, p := range s.Points {
			osuSize[p.Bytes] = s.sizes[i]
		}
	}
	var mu sync.Mutex
	var wrong int64
	emit := func(r *results.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if r.Error == "" {
			osu.WriteCollRow(w, osuSize[r.Bytes], r, f.full)
			w.Flush()
			wrong += max(r.Wrong, 0)
		}
		if jsonOut != nil {
			return jsonOut.Write(r)
		}
		return nil
	}
	for _, s := range specs {
		var err error
		if f.launcher == "env" {
			err = harness.RunRank(cmd.Context(), s.Spec, os.Getenv, emit)
		} else {
			err = launch.Launch(cmd.Context(), launch.Options{Spec: s.Spec, Args: []string{"worker"}, Emit: emit, Stderr: stderr})
		}
		if err != nil {
			return err
		}
	}
	if jsonOut != nil {
		if err := jsonOut.Finish(); err != nil {
			return err
		}
	}
	if wrong > 0 {
		fmt.Fprintf(stderr, "distbench: %d wrong elements\n", wrong)
		return exitError{1}
	}
	return nil
}
