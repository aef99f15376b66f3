package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/units"
	"github.com/distbench/distbench/results"
)

type runFlags struct {
	strategy, coll, dtype, op string
	minBytes, maxBytes, stepB string
	stepFactor                float64
	np, root, iters, warmup   int
	check                     bool
	jsonPath, link, launcher  string
	timeout                   time.Duration
	opts                      []string
	inplace                   string
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Measure one collective over a range of sizes and print the nccl-tests table",
		Example: `  distbench run --strategy ring --np 4 --collective allreduce --minbytes 4KiB --maxbytes 64MiB --stepfactor 2 --check
  mpirun -n 4 -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500 distbench run --launcher env --np 4 --strategy ring --collective allgather -b 1M -e 64M
  torchrun --nproc_per_node 4 --no_python distbench run --launcher env --np 4 --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := f.spec()
			if err != nil {
				return usageError{err}
			}
			// The local launcher starts every rank here; under mpirun or
			// srun this process is one rank.
			localRanks := spec.NP
			if f.launcher == "env" {
				localRanks = 1
			}
			if err := spec.CheckMemory(localRanks); err != nil {
				return usageError{err}
			}
			return runSpec(cmd, spec, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.strategy, "strategy", "ring", "strategy to measure (see 'distbench strategies')")
	fl.IntVar(&f.np, "np", 2, "number of ranks (local worker processes)")
	fl.StringVar(&f.coll, "collective", "allreduce", "collective: "+strings.Join(job.Collectives(), ", "))
	fl.StringVarP(&f.minBytes, "minbytes", "b", "4KiB", "smallest size (bytes, or with a unit: 4K, 4KiB, 1M)")
	fl.StringVarP(&f.maxBytes, "maxbytes", "e", "64MiB", "largest size")
	fl.Float64VarP(&f.stepFactor, "stepfactor", "f", 2, "multiply the size by this between points")
	fl.StringVarP(&f.stepB, "stepbytes", "i", "", "add this to the size between points (instead of --stepfactor)")
	fl.StringVarP(&f.dtype, "dtype", "d", "float32", "element type: "+strings.Join(dtypeNames(), ", "))
	fl.StringVarP(&f.op, "op", "o", "sum", "reduction op: sum, prod, max, min, avg")
	fl.IntVarP(&f.root, "root", "r", 0, "root rank for broadcast, reduce, gather, scatter")
	fl.IntVarP(&f.iters, "iters", "n", 20, "timed iterations per size")
	fl.IntVarP(&f.warmup, "warmup", "w", 5, "untimed warm-up iterations per size")
	fl.BoolVarP(&f.check, "check", "c", false, "check results with exactly reducible inputs; any wrong element fails the run")
	fl.StringVar(&f.jsonPath, "json", "", "append one JSON record per row to this file (JSON Lines, flushed per row)")
	fl.DurationVar(&f.timeout, "timeout", collective.DefaultTimeout, "deadline of every operation")
	fl.StringVar(&f.link, "link", "", "shape every rank's NIC, e.g. 10Gbit,25us or a preset (1g, 10g, 25g, 100g, lan, wan)")
	fl.StringArrayVar(&f.opts, "opt", nil, "strategy option key=value (repeatable), e.g. --opt chunk=256KiB")
	fl.StringVar(&f.inplace, "inplace", "both", "which forms to measure: both, out (out-of-place) or in (in-place)")
	fl.StringVar(&f.launcher, "launcher", "local", "local: start --np worker processes here; env: this process is one rank started by mpirun, srun, torchrun or a Kubernetes Job")
	return cmd
}

func dtypeNames() []string {
	var s []string
	for _, d := range collective.DTypes() {
		s = append(s, d.String())
	}
	return s
}

// sizes expands min/max/step into the list of sizes, as nccl-tests does
// (plan.SizeSteps).
func (f *runFlags) sizes(dt collective.DType) ([]int64, error) {
	lo, err := units.ParseBytes(f.minBytes)
	if err != nil {
		return nil, fmt.Errorf("--minbytes: %w", err)
	}
	hi, err := units.ParseBytes(f.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("--maxbytes: %w", err)
	}
	if lo > hi {
		return nil, fmt.Errorf("--minbytes %s is larger than --maxbytes %s", f.minBytes, f.maxBytes)
	}
	elem := int64(dt.Size())
	if lo%elem != 0 {
		return nil, fmt.Errorf("size %d bytes is not a multiple of %s's %d bytes (accepted: multiples of %d)", lo, dt, elem, elem)
	}
	var step int64
	if f.stepB != "" {
		if step, err = units.ParseBytes(f.stepB); err != nil || step <= 0 {
			return nil, fmt.Errorf("--stepbytes %q: want a positive size such as 1MiB", f.stepB)
		}
		if step%elem != 0 {
			return nil, fmt.Errorf("--stepbytes %s: not a whole number of %s elements (accepted: multiples of %d bytes)", f.stepB, dt, elem)
		}
	} else if !(f.stepFactor > 1) || math.IsInf(f.stepFactor, 0) {
		// Written so that NaN, of which no comparison is true, fails too.
		return nil, fmt.Errorf("--stepfactor %g: want a finite number greater than 1, such as 2", f.stepFactor)
	}
	out, err := plan.SizeSteps(lo, hi, f.stepFactor, step, elem)
	if err != nil {
		return nil, fmt.Errorf("--minbytes %s to --maxbytes %s: %w", f.minBytes, f.maxBytes, err)
	}
	return out, nil
}

func (f *runFlags) spec() (*job.Spec, error) {
	if _, err := collective.Lookup(f.strategy); err != nil {
		return nil, err
	}
	dt, err := collective.ParseDType(f.dtype)
	if err != nil {
		return nil, err
	}
	if _, err := collective.ParseOp(f.op); err != nil {
		return nil, err
	}
	if f.np < 1 {
		return nil, fmt.Errorf("--np %d: must be at least 1", f.np)
	}
	if f.launcher != "local" && f.launcher != "env" {
		return nil, fmt.Errorf("--launcher %q (accepted: local, env)", f.launcher)
	}
	if f.timeout < job.MinTimeout {
		return nil, fmt.Errorf("--timeout %v: too short (accepted: %v or more)", f.timeout, job.MinTimeout)
	}
	sizes, err := f.sizes(dt)
	if err != nil {
		return nil, err
	}
	var modes []bool
	switch f.inplace {
	case "both":
		modes = []bool{false, true}
	case "out":
		modes = []bool{false}
	case "in":
		modes = []bool{true}
	default:
		return nil, fmt.Errorf("--inplace %q (accepted: both, out, in)", f.inplace)
	}
	opts, err := parseOpts(f.opts)
	if err != nil {
		return nil, err
	}
	spec := &job.Spec{
		Strategy: f.strategy, NP: f.np, Options: opts, Link: f.link, Timeout: f.timeout,
		Iters: f.iters, Warmup: f.warmup, Check: f.check,
		// Every iteration's time (the slowest rank's) goes into --json,
		// so that a distribution, not only its summary, can be studied.
		KeepSamples: true,
	}
	for _, s := range sizes {
		for _, inplace := range modes {
			spec.Points = append(spec.Points, job.Point{
				Collective: f.coll, Bytes: s, DType: dt.String(), Op: f.op, Root: f.root, InPlace: inplace,
			})
		}
	}
	return spec, spec.Validate()
}

func runSpec(cmd *cobra.Command, spec *job.Spec, f *runFlags, stdout, stderr io.Writer) error {
	rank0 := true
	if f.launcher == "env" {
		// Every rank runs this command; only rank 0 prints the table and
		// gets the records.
		if info, err := rendezvous.FromEnv(os.Getenv); err == nil && info.Rank != 0 {
			rank0 = false
		}
	}
	var jsonOut *results.Writer
	if f.jsonPath != "" && rank0 {
		// The records of a sweep's results.jsonl (an env record, the
		// schema), so that report and compare read this file too.
		env := results.CaptureEnv()
		env.Link = spec.Link
		for _, p := range spec.Points {
			env.Planned = append(env.Planned, spec.PointID(p))
		}
		var err error
		if jsonOut, err = results.NewFileWriter(f.jsonPath, env); err != nil {
			return usageError{fmt.Errorf("--json: %w", err)}
		}
		defer jsonOut.Close()
	}
	tableOut := stdout
	if !rank0 {
		tableOut = io.Discard
	}
	tw := newTable(tableOut, spec, f.inplace)
	var mu sync.Mutex
	emit := func(r *results.Record) error {
		mu.Lock()
		defer mu.Unlock()
		tw.add(r)
		if jsonOut != nil {
			return jsonOut.Write(r)
		}
		return nil
	}
	tw.header()
	var err error
	if f.launcher == "env" {
		err = harness.RunRank(cmd.Context(), spec, os.Getenv, emit)
	} else {
		err = launch.Launch(cmd.Context(), launch.Options{Spec: spec, Args: []string{"worker"}, Emit: emit, Stderr: stderr})
	}
	tw.footer(err != nil)
	if err != nil {
		return err
	}
	if jsonOut != nil {
		// Only a run that measured every point is marked finished.
		if err := jsonOut.Finish(); err != nil {
			return err
		}
	}
	if tw.wrong > 0 {
		fmt.Fprintf(stderr, "distbench: %d wrong elements\n", tw.wrong)
		return exitError{1}
	}
	return nil
}

// table prints nccl-tests' table: one line per size, out-of-place columns
// then in-place columns, as the records for that size arrive.
type table struct {
	w       *bufio.Writer
	spec    *job.Spec
	modes   string
	pending map[int64][2]*results.Record
	busbw   []float64
	wire    []*results.Record // one per row that has wire bytes, for wireTable
	wrong   int64
	check   bool
	rows    int
}

func newTable(w io.Writer, spec *job.Spec, modes string) *table {
	return &table{w: bufio.NewWriter(w), spec: spec, modes: modes, pending: map[int64][2]*results.Record{}, check: spec.Check}
}

func (t *table) header() {
	s := t.spec
	fmt.Fprintf(t.w, "# distbench run: strategy %s, np %d, iters %d, warmup %d, check %v", s.Strategy, s.NP, s.Iters, s.Warmup, s.Check)
	if s.Link != "" {
		fmt.Fprintf(t.w, ", link %s", s.Link)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		fmt.Fprintf(t.w, ", %s=%s", k, s.Options[k])
	}
	fmt.Fprintf(t.w, "\n# time is the median over iterations of the slowest rank's time\n#\n")
	fmt.Fprintf(t.w, "# %63s %36s\n", "out-of-place", "in-place")
	fmt.Fprintf(t.w, "# %10s %12s %8s %6s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n",
		"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
	fmt.Fprintf(t.w, "# %10s %12s %8s %6s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n",
		"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
	t.w.Flush()
}

func (t *table) add(r *results.Record) {
	key := int64(-1)
	for _, p := range t.spec.Points {
		if t.spec.PointID(p) == r.Point {
			key = p.Bytes
		}
	}
	pair := t.pending[key]
	if r.InPlace {
		pair[1] = r
	} else {
		pair[0] = r
	}
	t.pending[key] = pair
	if (t.modes == "both" && pair[0] != nil && pair[1] != nil) || t.modes != "both" {
		t.row(pair)
		delete(t.pending, key)
	}
}

func (t *table) row(pair [2]*results.Record) {
	first := pair[0]
	if first == nil {
		first = pair[1]
	}
	op := first.Op
	if op == "" {
		op = "none"
	}
	fmt.Fprintf(t.w, "  %10d %12d %8s %6s %6d", first.Bytes, first.Count, first.DType, op, first.Root)
	for _, r := range pair {
		if r != nil && r.Error == "" && r.HasWire() {
			t.wire = append(t.wire, r)
			break
		}
	}
	for _, r := range pair {
		if r == nil {
			fmt.Fprintf(t.w, " %9s %8s %8s %6s", "-", "-", "-", "-")
			continue
		}
		if r.Error != "" {
			fmt.Fprintf(t.w, " %9s %8s %8s %6s", "failed", "-", "-", "-")
			continue
		}
		wrong := "N/A"
		if t.check {
			wrong = fmt.Sprint(r.Wrong)
			t.wrong += max(r.Wrong, 0)
		}
		fmt.Fprintf(t.w, " %9s %8.2f %8.2f %6s", fmtTime(r.TimeUs), r.AlgBWGBs, r.BusBWGBs, wrong)
		t.busbw = append(t.busbw, r.BusBWGBs)
	}
	fmt.Fprintln(t.w)
	t.rows++
	t.w.Flush()
}

func fmtTime(us float64) string {
	if us >= 1e6 {
		return fmt.Sprintf("%.0f", us)
	}
	return fmt.Sprintf("%.2f", us)
}

func (t *table) footer(failed bool) {
	for _, pair := range t.pending { // a failed run leaves half rows
		t.row(pair)
	}
	t.wireTable()
	if t.check {
		status := "OK"
		if t.wrong > 0 {
			status = "FAILED"
		}
		fmt.Fprintf(t.w, "# Out of bounds values : %d %s\n", t.wrong, status)
	}
	avg := 0.0
	for _, b := range t.busbw {
		avg += b
	}
	if len(t.busbw) > 0 {
		avg /= float64(len(t.busbw))
	}
	fmt.Fprintf(t.w, "# Avg bus bandwidth    : %.4f\n", avg)
	if failed {
		fmt.Fprintf(t.w, "# incomplete: the run failed after %d rows\n", t.rows)
	}
	t.w.Flush()
}
