package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// exitInterrupted is the status of a sweep stopped by Ctrl-C, as a shell
// reports a command killed by SIGINT.
const exitInterrupted = 130

type sweepFlags struct {
	plan, out, resume             string
	noReport, dryRun, skipUnavail bool

	strategies, colls, sizes, dtypes, ops, peers []string
	links, opts, transports, devices, hosts      []string
	nps                                          []int
	minBytes, maxBytes, stepBytes, inplace       string
	stepFactor                                   float64
	root, iters, warmup, rounds                  int
	check                                        bool
	timeBudget, timeout                          time.Duration
	launcher                                     string
	launcherArgs                                 []string
}

// planFlags are the flags that describe a plan's collectives; any of them
// makes the plan from flags instead of a file.
var planFlags = []string{"strategy", "np", "collective", "minbytes", "maxbytes", "stepfactor", "stepbytes",
	"sizes", "dtype", "op", "inplace", "link", "opt", "root", "transport", "device", "hosts"}

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &sweepFlags{}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Measure a plan of strategies × world sizes × collectives × sizes into a run directory, and report",
		Long: `sweep measures many points in one go and writes them to a run directory
(results.jsonl, results.bench, plan.yaml), then writes report.md there.

The plan comes from --plan FILE (YAML), from flags (--strategy, --np,
--collective, -b/-e/-f or --sizes, --dtype, --op, --link, ...), or, given
neither, the built-in default plan (distbench sweep --dry-run shows it).
Every (strategy, np, link, options) combination is one launch of worker
processes that measures all its points. With --rounds N (or the plan's
rounds; the default plan has 6) every point is measured in N rounds
interleaved across the sweep, round 1 of every launch, then round 2, ..., so
that a burst of load on the machine hits one round of a point and not all of
it; --iters and --time-budget are split across the rounds, the warm-up is per
round. Records are written as they arrive; Ctrl-C stops the sweep and keeps
them, and --resume DIR continues it, measuring only what is not recorded.

Exit status: 0 when every point was measured correctly; 1 when a point
failed, was skipped or computed wrong results; 2 on bad input; 130 when
interrupted.`,
		Example: `  distbench sweep                                   # the default plan, into runs/<timestamp>
  distbench sweep --plan plans/big.yaml --out runs/big
  distbench sweep --strategy ring,tree --np 2,4,8 --collective allreduce -b 4KiB -e 64MiB -f 2
  distbench sweep --strategy ring --np 4 --sizes 1MiB,16MiB --link '' --link 10g --link 1g,100us
  distbench sweep --peers mpi,gloo --time-budget 1s
  distbench sweep --strategy ring,tree --np 2,4 --rounds 3   # each point in 3 interleaved rounds
  distbench sweep --resume runs/20260101-120000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweep(cmd, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.plan, "plan", "", "plan file (YAML); see harness/plan/default.yaml")
	fl.StringVar(&f.out, "out", "", "run directory to create (default runs/<timestamp>)")
	fl.StringVar(&f.resume, "resume", "", "continue the sweep in this run directory, skipping the points it finished")
	fl.BoolVar(&f.noReport, "no-report", false, "do not write report.md after the sweep")
	fl.BoolVar(&f.dryRun, "dry-run", false, "validate and print the plan's launches and points, and measure nothing")
	fl.BoolVar(&f.skipUnavail, "skip-unavailable", false, "leave out what cannot run here (a strategy, peer or dataset) instead of recording it as failed")

	f.addPlanFlags(fl)
	fl.StringSliceVar(&f.peers, "peers", nil, "also run the allreduce sizes through reference implementations: mpi, gloo")
	fl.StringVar(&f.launcher, "launcher", "local", launcherUsage+"; under an engine, one allocation of the plan's largest np sweeps the smaller ones on its first ranks")
	fl.StringArrayVar(&f.launcherArgs, "launcher-arg", nil, "an argument for --launcher mpirun or srun, before the program (repeatable)")
	return cmd
}

// addPlanFlags registers the flags that make or amend a plan, shared by
// sweep and ab.
func (f *sweepFlags) addPlanFlags(fl *pflag.FlagSet) {
	fl.StringSliceVar(&f.strategies, "strategy", []string{plan.AllStrategies}, "strategies, comma-separated; all = every one that can run here")
	fl.IntSliceVar(&f.nps, "np", []int{2, 4}, "world sizes, comma-separated")
	fl.StringSliceVar(&f.colls, "collective", []string{"allreduce"}, "collectives, comma-separated: "+strings.Join(job.Collectives(), ", "))
	fl.StringVarP(&f.minBytes, "minbytes", "b", "4KiB", "smallest size")
	fl.StringVarP(&f.maxBytes, "maxbytes", "e", "16MiB", "largest size")
	fl.Float64VarP(&f.stepFactor, "stepfactor", "f", 4, "multiply the size by this between points")
	fl.StringVarP(&f.stepBytes, "stepbytes", "i", "", "add this to the size between points (instead of --stepfactor)")
	fl.StringSliceVar(&f.sizes, "sizes", nil, "sizes, comma-separated (instead of -b/-e/-f), e.g. 4KiB,1MiB,16MiB")
	fl.StringSliceVarP(&f.dtypes, "dtype", "d", []string{"float32"}, "element types, comma-separated")
	fl.StringSliceVarP(&f.ops, "op", "o", []string{"sum"}, "reduction ops, comma-separated")
	fl.StringVar(&f.inplace, "inplace", plan.DefaultInPlace, "forms to measure: in, out or both")
	fl.StringArrayVar(&f.links, "link", nil, "network shape, repeatable, one launch each ('' = unshaped), e.g. --link '' --link 10Gbit,25us; "+
		"per-rank overrides alone apply to every link: --link 10g --link rank3=1Gbit, or within one: --link '10g;rank3=1Gbit'")
	fl.StringArrayVar(&f.opts, "opt", nil, "strategy option key=value (repeatable)")
	fl.StringSliceVar(&f.transports, "transport", nil, "transports, comma-separated, one launch each (default tcp): "+transportUsage)
	fl.StringArrayVar(&f.hosts, "hosts", nil, "simulated hosts of the local launcher's ranks, as run's --hosts, repeatable, one launch each at the np it lays out ('' = none), "+
		"e.g. --np 2,4 --hosts '' --hosts 2x2 --hosts 3,1")
	fl.StringSliceVar(&f.devices, "device", nil, "where the buffers live, comma-separated, one launch each: cpu (default), cuda (GPU memory)")
	fl.IntVarP(&f.root, "root", "r", 0, "root rank for rooted collectives")

	fl.IntVarP(&f.iters, "iters", "n", 0, fmt.Sprintf("timed iterations per point (default: the plan's, else %d)", plan.DefaultIters))
	fl.IntVarP(&f.warmup, "warmup", "w", 0, fmt.Sprintf("warm-up iterations per point (default: the plan's, else %d)", plan.DefaultWarmup))
	fl.DurationVar(&f.timeBudget, "time-budget", 0, "stop a point's timed iterations once they took this long (at least 3 run), e.g. 2s")
	fl.IntVar(&f.rounds, "rounds", 0, fmt.Sprintf("measure every point in this many rounds interleaved across the sweep, 1 to %d (default: the plan's, else 1)", plan.MaxRounds))
	fl.DurationVar(&f.timeout, "timeout", 0, fmt.Sprintf("deadline of every operation (default: the plan's, else %v)", plan.DefaultTimeout))
	fl.BoolVarP(&f.check, "check", "c", true, "check results with exactly reducible inputs (default: the plan's, else on)")
}

func runSweep(cmd *cobra.Command, f *sweepFlags, stdout, stderr io.Writer) error {
	p, dir, err := f.build(cmd)
	if err != nil {
		return usageError{err}
	}
	if err := checkLauncher(f.launcher, f.launcherArgs); err != nil {
		return usageError{err}
	}
	exp, err := p.Expand()
	if err != nil {
		return usageError{err}
	}
	if err := checkSimulatedHosts(exp, f.launcher); err != nil {
		return usageError{err}
	}
	if f.dryRun {
		printPlan(stdout, exp)
		return nil
	}
	if !p.SkipUnavailable {
		if err := devicesAvailable(exp); err != nil {
			return usageError{err}
		}
	}
	switch f.launcher {
	case "mpirun", "srun":
		if f.out == "" && f.resume == "" {
			// Every rank must agree on the directory rank 0 writes.
			cmd.Flags().Set("out", dir)
		}
		return runEngine(cmd, f.launcher, planRanks(exp), f.launcherArgs, stdout, stderr)
	case "env":
		var res *harness.SweepResult
		err := inAllocation(cmd, exp, func(o harness.SweepOptions) error {
			var err error
			res, err = sweepInto(cmd, f, exp, dir, o, stdout, stderr)
			return err
		})
		if res == nil || err != nil {
			return err
		}
		return f.finish(res, dir, stdout, stderr)
	}
	res, err := sweepInto(cmd, f, exp, dir, harness.SweepOptions{}, stdout, stderr)
	if err != nil {
		return err
	}
	return f.finish(res, dir, stdout, stderr)
}

// sweepInto runs the sweep into dir, o's Launch (if any) starting each
// launch.
func sweepInto(cmd *cobra.Command, f *sweepFlags, exp *plan.Expanded, dir string, o harness.SweepOptions, stdout, stderr io.Writer) (*harness.SweepResult, error) {
	prog := newProgress(stdout, stderr)
	fmt.Fprintf(stdout, "distbench sweep: %s in %s%s into %s\n", plural(exp.NumPoints(), "point"), plural(exp.NumLaunches(), "launch"), inRounds(exp), dir)
	o.Plan, o.Dir, o.Env, o.Resume, o.Args, o.Progress = exp, dir, results.CaptureEnv(), f.resume != "", []string{"worker"}, prog
	return harness.Sweep(cmd.Context(), o)
}

// finish writes the report and says how the sweep went.
func (f *sweepFlags) finish(res *harness.SweepResult, dir string, stdout, stderr io.Writer) error {
	var reportErr error
	if !f.noReport {
		if reportErr = reports.Generate(dir); reportErr != nil {
			fmt.Fprintf(stderr, "distbench: %v\n", reportErr)
		} else {
			fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, reports.ReportFile))
		}
	}
	fmt.Fprintf(stdout, "distbench sweep: %s in %s; results in %s\n", summary(res), results.FormatDuration(res.Elapsed), filepath.Join(dir, results.FileName))
	switch {
	case res.Interrupted:
		fmt.Fprintf(stderr, "distbench: sweep interrupted; continue it with: distbench sweep --resume %s\n", dir)
		return exitError{exitInterrupted}
	case !res.OK() || reportErr != nil:
		return exitError{1}
	}
	return nil
}

func summary(r *harness.SweepResult) string {
	parts := []string{fmt.Sprintf("%d of %d points measured", r.Measured+r.Resumed, r.Planned)}
	if r.Rounds > 1 {
		parts[0] += fmt.Sprintf(" in %d rounds", r.Rounds)
	}
	if r.Resumed > 0 {
		parts[0] += fmt.Sprintf(" (%d by an earlier session)", r.Resumed)
	}
	for _, c := range []struct {
		n    int
		what string
	}{{r.Failed, "failed"}, {r.Stopped, "cut short"}, {r.Skipped, "skipped"}, {r.Wrong, "computed wrong results"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return strings.Join(parts, ", ")
}

// build makes the plan from --plan, flags, the resumed run's plan.yaml or
// the default, applies the overriding flags, and chooses the run directory.
func (f *sweepFlags) build(cmd *cobra.Command) (*plan.Plan, string, error) {
	fl := cmd.Flags()
	var fromFlags []string
	for _, name := range planFlags {
		if fl.Changed(name) {
			fromFlags = append(fromFlags, "--"+name)
		}
	}
	if f.plan != "" && len(fromFlags) > 0 {
		return nil, "", fmt.Errorf("--plan and %s: give the plan in the file or in flags, not both", strings.Join(fromFlags, ", "))
	}
	dir, err := f.runDir()
	if err != nil {
		return nil, "", err
	}
	p, err := f.source(fl, len(fromFlags) > 0, dir)
	if err != nil {
		return nil, "", err
	}
	if err := f.override(fl, p); err != nil {
		return nil, "", err
	}
	return p, dir, nil
}

// runDir is the run directory: --resume's, --out (which must not hold
// results yet), or a new one under runs/ named by the time.
func (f *sweepFlags) runDir() (string, error) {
	dir := f.out
	switch {
	case f.resume != "" && f.out != "":
		return "", errors.New("--resume DIR continues DIR: it takes no --out")
	case f.resume != "":
		dir = f.resume
		if _, err := os.Stat(filepath.Join(dir, results.FileName)); err != nil {
			return "", fmt.Errorf("--resume %s: no %s there to continue", dir, results.FileName)
		}
	case dir == "":
		dir = filepath.Join("runs", time.Now().Format("20060102-150405"))
		for i := 2; exists(dir); i++ {
			dir = filepath.Join("runs", fmt.Sprintf("%s-%d", time.Now().Format("20060102-150405"), i))
		}
	default:
		if exists(filepath.Join(dir, results.FileName)) {
			return "", fmt.Errorf("--out %s already holds results: continue it with --resume %s, or choose another directory", dir, dir)
		}
	}
	return dir, nil
}

// source is the plan as given: --plan's file, the flags' one block, the
// plan a resumed run recorded in dir, or the embedded default.
func (f *sweepFlags) source(fl *pflag.FlagSet, fromFlags bool, dir string) (*plan.Plan, error) {
	parse := func(path string, src []byte) (*plan.Plan, error) {
		p, err := plan.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return p, nil
	}
	switch {
	case f.plan != "":
		src, err := os.ReadFile(f.plan)
		if err != nil {
			return nil, fmt.Errorf("--plan: %w", err)
		}
		return parse(f.plan, src)
	case fromFlags:
		if fl.Changed("stepfactor") && !(f.stepFactor > 1 && !math.IsInf(f.stepFactor, 0)) {
			return nil, fmt.Errorf("--stepfactor %g: want a finite number greater than 1, such as 2", f.stepFactor)
		}
		return f.flagPlan()
	case f.resume != "" && exists(filepath.Join(dir, harness.PlanFileName)):
		path := filepath.Join(dir, harness.PlanFileName)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return parse(path, src)
	case f.resume != "":
		return nil, fmt.Errorf("--resume %s: no %s there; give the plan again (--plan or flags)", dir, harness.PlanFileName)
	default:
		return parse("the default plan", plan.DefaultYAML)
	}
}

// override applies the flags that override any plan's settings (iters,
// warmup, time budget, rounds, timeout, check, peers, skip-unavailable).
func (f *sweepFlags) override(fl *pflag.FlagSet, p *plan.Plan) error {
	if fl.Changed("iters") {
		if f.iters < 1 {
			// A plan's iters of 0 means its default: refuse it here
			// rather than let it quietly become 20.
			return fmt.Errorf("--iters %d: must be at least 1", f.iters)
		}
		p.Iters = f.iters
		for i := range p.Collectives {
			p.Collectives[i].Iters = 0
		}
	}
	if fl.Changed("warmup") {
		p.Warmup = &f.warmup
		for i := range p.Collectives {
			p.Collectives[i].Warmup = nil
		}
	}
	if fl.Changed("time-budget") {
		p.TimeBudget = f.timeBudget
	}
	if fl.Changed("rounds") {
		if f.rounds < 1 || f.rounds > plan.MaxRounds {
			return fmt.Errorf("--rounds %d: want an integer from 1 to %d", f.rounds, plan.MaxRounds)
		}
		if f.resume != "" {
			// The rounds already recorded say how many there are; a
			// resumed run measures the ones missing, as planned.
			return errors.New("--resume continues a sweep in the rounds it was planned with: it takes no --rounds")
		}
		p.Rounds = plan.RoundCount(f.rounds)
	}
	if fl.Changed("timeout") {
		if f.timeout < job.MinTimeout {
			return fmt.Errorf("--timeout %v: too short (accepted: %v or more)", f.timeout, job.MinTimeout)
		}
		p.Timeout = f.timeout
	}
	if fl.Changed("check") {
		p.Check = &f.check
	}
	if fl.Changed("peers") {
		p.Peers = f.peers
	}
	if fl.Changed("skip-unavailable") {
		p.SkipUnavailable = f.skipUnavail
	}
	if f.iters < 0 || f.warmup < 0 || f.timeBudget < 0 {
		return errors.New("--iters, --warmup and --time-budget must not be negative")
	}
	return nil
}

// flagPlan is the one collectives block the flags describe.
func (f *sweepFlags) flagPlan() (*plan.Plan, error) {
	b := plan.CollectiveBlock{
		Strategies: f.strategies, NP: f.nps, Collectives: f.colls, DTypes: f.dtypes, Ops: f.ops,
		InPlace: f.inplace, Links: f.links, Root: f.root, Transports: f.transports, Devices: f.devices, Hosts: f.hosts,
	}
	for _, tr := range f.transports {
		if err := linkspec.CheckTransport(tr); err != nil {
			return nil, fmt.Errorf("--transport: %w", err)
		}
	}
	if len(f.sizes) > 0 {
		b.Sizes.List = f.sizes
	} else {
		b.Sizes.Range = &plan.SizeRange{Min: f.minBytes, Max: f.maxBytes, Step: f.stepBytes}
		if f.stepBytes == "" {
			b.Sizes.Range.Factor = f.stepFactor
		}
	}
	opts, err := parseOpts(f.opts)
	if err != nil {
		return nil, err
	}
	for k, v := range opts {
		if b.Options == nil {
			b.Options = map[string]string{}
		}
		b.Options[k] = v
	}
	return &plan.Plan{Name: "flags", Collectives: []plan.CollectiveBlock{b}}, nil
}

// checkSimulatedHosts refuses a plan with host layouts under a launcher
// other than the local one, which alone lays ranks out on simulated hosts
// (as run --hosts).
func checkSimulatedHosts(exp *plan.Expanded, launcher string) error {
	if launcher == "local" {
		return nil
	}
	for _, g := range exp.Groups {
		if g.Spec != nil && g.Spec.Hosts != "" {
			return fmt.Errorf("hosts %s: only the local launcher simulates hosts (under %s, set %s per rank)", g.Spec.Hosts, launcher, transport.EnvHostID)
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// printPlan is --dry-run's output: every launch and its points.
func printPlan(w io.Writer, exp *plan.Expanded) {
	p := exp.Plan
	fmt.Fprintf(w, "plan %q: %s in %s%s; iters %d, warmup %d, check %v, timeout %v",
		p.Name, plural(exp.NumPoints(), "point"), plural(exp.NumLaunches(), "launch"), inRounds(exp), p.Iters, *p.Warmup, *p.Check, p.Timeout)
	if p.TimeBudget > 0 {
		fmt.Fprintf(w, ", time budget %v a point", p.TimeBudget)
	}
	if n := exp.Rounds(); n > 1 {
		fmt.Fprintf(w, "; iters and time budget split across the rounds, warmup %d in each", *p.Warmup)
	}
	fmt.Fprintln(w)
	for _, n := range exp.Notes {
		fmt.Fprintf(w, "skipped: %s\n", n)
	}
	for _, g := range exp.Groups {
		fmt.Fprintf(w, "launch %s: %d points", g.Name(), len(g.Points))
		if g.Rounds > 1 {
			fmt.Fprintf(w, ", %d rounds of %s iterations", g.Rounds, roundIterList(g))
		}
		if g.Skip != "" {
			fmt.Fprintf(w, " (skipped: %s)", g.Skip)
		}
		fmt.Fprintln(w)
		for _, pt := range g.Points {
			fmt.Fprintf(w, "  %s\n", pt.Desc)
		}
	}
}

// inRounds is " (3 rounds)" for a plan in several rounds, "" otherwise.
func inRounds(exp *plan.Expanded) string {
	if n := exp.Rounds(); n > 1 {
		return fmt.Sprintf(" (%d rounds)", n)
	}
	return ""
}

// roundIterList is each round's share of a group's iterations: "7+7+6".
func roundIterList(g *plan.Group) string {
	parts := make([]string, g.Rounds)
	for k := range parts {
		parts[k] = fmt.Sprint(g.RoundSpec(k + 1).Iters)
	}
	return strings.Join(parts, "+")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
