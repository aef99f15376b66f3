package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/internal/units"
	"github.com/distbench/distbench/reports/nccltests"
	"github.com/distbench/distbench/results"
)

type runFlags struct {
	strategy, coll, dtype, op string
	minBytes, maxBytes, stepB string
	stepFactor                float64
	lo, hi, stepBytes         int64 // the parsed sizes, for the preamble
	np, root, iters, warmup   int
	check                     checkCount
	jsonPath, link, launcher  string
	transport                 string
	hosts                     string
	launcherArgs              []string
	timeout                   time.Duration
	opts                      []string
	inplace                   string
	device                    string
	// nccl-tests' options (see ncclOutput).
	average, perIter, perIterSkip, cycles, timestamps int
	ncclJSON                                          string
	// nccl-tests' flags distbench has no concept of, and -t, -g.
	ncclOnly   map[string]*string
	ncclRanks  ncclRanksFlags
	timeoutArg *secondsValue
}

// checkCount is -c/--check: how many checked runs each point gets, as
// nccl-tests' -c N, where 0 turns the check off. It also takes true and
// false, so --check=false reads as it says.
type checkCount struct{ n int }

func (c *checkCount) String() string { return strconv.Itoa(c.n) }
func (c *checkCount) Type() string   { return "N" }
func (c *checkCount) Set(s string) error {
	switch strings.ToLower(s) {
	case "true":
		c.n = 1
		return nil
	case "false":
		c.n = 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a count of checked runs (0 for none) or true/false")
	}
	c.n = n
	return nil
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd, _ := newRunCmdFlags(stdout, stderr)
	return cmd
}

// newRunCmdFlags is newRunCmd and the flags it binds.
func newRunCmdFlags(stdout, stderr io.Writer) (*cobra.Command, *runFlags) {
	f := &runFlags{check: checkCount{1}, average: 1, timeout: collective.DefaultTimeout}
	f.timeoutArg = &secondsValue{d: &f.timeout, def: collective.DefaultTimeout}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Measure one collective over a range of sizes and print the nccl-tests table",
		Long: `Measure one collective over a range of sizes and print nccl-tests' table, column for column.

Every flag of nccl-tests 2.19.6 is accepted, with its meaning where distbench
has the concept (-b -e -i -f -n -w -c -o -d -r -a -I -K -N -S -J -T -t -g);
the others (-m -p -z -y -G -C -R -x -D -V -M -u), which shape how NCCL and
CUDA run, print one line saying why they do not apply when given a value that
would change anything. Installed under nccl-tests' program names
(make perf-links: all_reduce_perf, all_gather_perf, ...), distbench runs as
'distbench run --collective ...', so command lines paste in. Where a
definition differs:
  time   as nccl-tests (-a 1): each rank's mean iteration time, averaged over
         ranks; -a 0|2|3 take rank 0's, the least or the most. -a median
         gives distbench's robust statistic instead, the median over
         iterations of the slowest rank's time, which --json records always
         carry beside the mean.
  -c N   runs N checked operations on fresh, exactly reducible inputs before
         timing (nccl-tests checks after timing); on by default, as there.
  -t -g  ranks per process are -t × -g; with the local launcher --np
         defaults to that, under mpirun each process is one rank.
  -T     seconds (or a duration such as 90s): the deadline of every operation;
         0 (nccl-tests' "none") keeps the default, since a stalled peer must
         become an error.
  -J     writes nccl-tests' JSON document (version 3), with a "distbench"
         object added and only the environment variables that shape a run.
distbench adds the bytes on the wire per size and, in --json records, every
rank's figures.`,
		Example: `  distbench run --strategy ring --np 4 --collective allreduce -b 4KiB -e 64MiB -f 2
  distbench run --strategy tree --np 8 -d all -o all -I 1 -J tree.json
  distbench run --launcher mpirun --np 4 --collective allgather -b 1M -e 64M
  export DISTBENCH_TOKEN=$(openssl rand -hex 16)
  mpirun -n 4 -x DISTBENCH_TOKEN -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500 distbench run --launcher env --collective allgather -b 1M -e 64M
  torchrun --nproc_per_node 4 --no_python distbench run --launcher env -c 1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q (write a flag's value as --flag=value or -f value; --check alone means --check=1, --check N takes a count)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.ncclCompat(cmd.Flags(), stderr); err != nil {
				return usageError{err}
			}
			if f.launcher == "env" {
				// The engine's world size, less the strategy's server
				// processes (its last ranks); --np, if given, must agree.
				opts, err := parseOpts(f.opts)
				if err != nil {
					return usageError{err}
				}
				n, err := harness.EngineNP(os.Getenv, f.strategy, opts, f.np, cmd.Flags().Changed("np"))
				if err != nil {
					return usageError{err}
				}
				f.np = n
			}
			spec, err := f.spec()
			if err != nil {
				return usageError{err}
			}
			// The local launcher starts every rank here; under mpirun or
			// srun this process is one rank.
			localRanks := spec.NP
			if f.launcher != "local" {
				localRanks = 1
			}
			if err := spec.CheckMemory(localRanks); err != nil {
				return usageError{err}
			}
			if slices.Contains(launch.Engines(), f.launcher) {
				// The engine starts the strategy's servers too, after the
				// workers (harness.EngineNP).
				k, err := harness.ServerProcesses(spec.Strategy, spec.Options, spec.NP)
				if err != nil {
					return usageError{err}
				}
				return runEngine(cmd, f.launcher, f.np+k, f.launcherArgs, stdout, stderr)
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
	fl.Float64VarP(&f.stepFactor, "stepfactor", "f", 2, "multiply the size by this between points; 1 steps by --stepbytes instead, as nccl-tests")
	fl.StringVarP(&f.stepB, "stepbytes", "i", "", "add this to the size between points (default 1M once -f is 1; -i alone steps by bytes too)")
	fl.StringVarP(&f.dtype, "dtype", "d", "float32", "element type: "+strings.Join(dtypeNames(), ", ")+", or all (nccl-tests' names float, half, double work too)")
	fl.StringVarP(&f.op, "op", "o", "sum", "reduction op: sum, prod, max, min, avg, mulsum (nccl-tests' premultiplied sum), or all")
	fl.IntVarP(&f.root, "root", "r", 0, "root rank for broadcast, reduce, gather, scatter")
	fl.IntVarP(&f.iters, "iters", "n", 20, "timed iterations per size")
	fl.IntVarP(&f.warmup, "warmup", "w", 5, "untimed warm-up iterations per size")
	check := fl.VarPF(&f.check, "check", "", "checked runs per size on exactly reducible inputs, 0 (or false) for none; -c N as nccl-tests; any wrong element fails the run")
	check.NoOptDefVal = "1"
	// -c N as nccl-tests writes it: a shorthand consumes the next argument
	// only when its flag has no value of its own, which --check alone needs.
	fl.VarP(&f.check, "check-count", "c", "checked runs per size (nccl-tests' -c N)")
	fl.MarkHidden("check-count")
	fl.VarP(averageValue{&f.average}, "average", "a", "time: each rank's mean iteration time, then 0 rank 0's, 1 the mean over ranks (nccl-tests' default), 2 the least, 3 the most; median: the median over iterations of the slowest rank's time (distbench's)")
	fl.IntVarP(&f.perIter, "per_iter_timing", "I", 0, "1: add the per-iteration columns i_min, i_max, i_p99, i_cv% (and per-rank times to -J)")
	fl.IntVarP(&f.perIterSkip, "per_iter_skip", "K", 0, "leave this many leading iterations out of -I's summaries")
	fl.IntVarP(&f.cycles, "run_cycles", "N", 1, "run every size this many times, printing each cycle; 0 repeats until interrupted (health loops, with -S 1)")
	fl.IntVarP(&f.timestamps, "report_timestamps", "S", 0, "1: end every row with a timestamp")
	fl.StringVarP(&f.ncclJSON, "output_file", "J", "", "write nccl-tests' JSON document here (never over an existing file: then FILE.0, FILE.1, ...)")
	fl.StringVar(&f.jsonPath, "json", "", "append one JSON record per row to this file (JSON Lines, flushed per row), as sweep's results")
	fl.VarP(f.timeoutArg, "timeout", "T", "deadline of every operation: whole seconds (nccl-tests' -T 60) or a duration (90s)")
	fl.Var(newLinkValue(&f.link), "link", linkUsage)
	fl.StringVar(&f.transport, "transport", linkspec.TransportTCP, transportUsage)
	fl.StringVar(&f.hosts, "hosts", "", "lay the local ranks out on simulated hosts, each its own host identity: 2x2 (2 hosts of 2 ranks), 3,1 (ranks 0-2, then 3); for --opt algo=hier over loopback")
	fl.StringArrayVar(&f.opts, "opt", nil, "strategy option key=value (repeatable), e.g. --opt chunk=256KiB")
	fl.StringVar(&f.inplace, "inplace", "both", "which forms to measure: both, out (out-of-place) or in (in-place)")
	fl.StringVar(&f.device, "device", "cpu", "where the buffers live: cpu, or cuda (GPU memory; nccl uses it directly, the others stage it through pinned host memory)")
	fl.StringVar(&f.launcher, "launcher", "local", launcherUsage)
	fl.StringArrayVar(&f.launcherArgs, "launcher-arg", nil, "an argument for --launcher mpirun or srun, before the program (repeatable), e.g. --launcher-arg=--hostfile=hosts")
	f.ncclOnly = addNCCLFlags(fl, &f.ncclRanks)
	// nccl-tests' long names of flags distbench names otherwise.
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		switch name {
		case "datatype":
			name = "dtype"
		case "warmup_iters":
			name = "warmup"
		}
		return pflag.NormalizedName(name)
	})
	return cmd, f
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
	f.lo, f.hi = lo, hi
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
		f.stepBytes = step
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

// ncclAllDTypes is -d all: nccl-tests' types in its order (test_types in
// src/common.cu).
var ncclAllDTypes = []collective.DType{collective.Int8, collective.Uint8, collective.Int32, collective.Uint32, collective.Int64, collective.Uint64,
	collective.Float16, collective.Float32, collective.Float64, collective.BFloat16, collective.Float8E4M3, collective.Float8E5M2}

func (f *runFlags) dtypes() ([]collective.DType, error) {
	if strings.EqualFold(f.dtype, "all") {
		return ncclAllDTypes, nil
	}
	dt, err := collective.ParseDType(f.dtype)
	if err != nil {
		return nil, fmt.Errorf("%w, or all", err)
	}
	return []collective.DType{dt}, nil
}

func (f *runFlags) ops() ([]string, error) {
	if t, _ := job.TraitsOf(f.coll); !t.Reduces {
		return []string{f.op}, nil // ignored, as nccl-tests' "none"
	}
	if strings.EqualFold(f.op, "all") {
		var all []string
		for _, o := range collective.Ops() {
			all = append(all, o.String())
		}
		return all, nil
	}
	if _, err := collective.ParseOp(f.op); err != nil {
		return nil, fmt.Errorf("%w, or all", err)
	}
	return []string{f.op}, nil
}

// output checks nccl-tests' output flags and gathers them.
func (f *runFlags) output(args []string) (ncclOutput, error) {
	o := ncclOutput{average: f.average, perIter: f.perIter == 1, perIterSkip: f.perIterSkip, timestamps: f.timestamps == 1, args: args}
	switch {
	case f.average < -1 || f.average > 3:
		return o, fmt.Errorf("-a/--average %d (accepted: 0 rank 0, 1 mean, 2 min, 3 max)", f.average)
	case f.perIter != 0 && f.perIter != 1:
		return o, fmt.Errorf("-I/--per_iter_timing %d (accepted: 0 or 1)", f.perIter)
	case f.timestamps != 0 && f.timestamps != 1:
		return o, fmt.Errorf("-S/--report_timestamps %d (accepted: 0 or 1)", f.timestamps)
	case f.perIterSkip < 0 || (f.perIterSkip > 0 && f.perIterSkip >= f.iters):
		return o, fmt.Errorf("-K/--per_iter_skip %d (accepted: 0 to %d, fewer than --iters)", f.perIterSkip, max(f.iters-1, 0))
	case f.perIterSkip > 0 && !o.perIter:
		return o, fmt.Errorf("-K/--per_iter_skip %d needs -I 1", f.perIterSkip)
	case f.cycles < 0:
		return o, fmt.Errorf("-N/--run_cycles %d (accepted: 0 to repeat until interrupted, or a positive count)", f.cycles)
	}
	return o, nil
}

func (f *runFlags) spec() (*job.Spec, error) {
	if _, err := collective.Lookup(f.strategy); err != nil {
		return nil, err
	}
	dts, err := f.dtypes()
	if err != nil {
		return nil, err
	}
	ops, err := f.ops()
	if err != nil {
		return nil, err
	}
	if _, err := f.output(nil); err != nil {
		return nil, err
	}
	if f.np < 1 {
		return nil, fmt.Errorf("--np %d: must be at least 1", f.np)
	}
	if err := checkLauncher(f.launcher, f.launcherArgs); err != nil {
		return nil, err
	}
	if f.hosts != "" && f.launcher != "local" {
		return nil, fmt.Errorf("--hosts %s: only the local launcher simulates hosts (under %s, set %s per rank)", f.hosts, f.launcher, transport.EnvHostID)
	}
	if f.timeout < job.MinTimeout {
		return nil, fmt.Errorf("--timeout %v: too short (accepted: %v or more)", f.timeout, job.MinTimeout)
	}
	widest := dts[0]
	for _, dt := range dts {
		if dt.Size() > widest.Size() {
			widest = dt
		}
	}
	sizes, err := f.sizes(widest)
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
	if f.transport != "" { // "" from callers that build runFlags themselves: tcp
		if err := linkspec.CheckTransport(f.transport); err != nil {
			return nil, fmt.Errorf("--transport: %w", err)
		}
	}
	spec := &job.Spec{
		Strategy: f.strategy, NP: f.np, Options: opts, Link: f.link, Transport: job.CanonicalTransport(f.transport), Device: specDevice(f.device), Hosts: f.hosts, Timeout: f.timeout,
		Iters: f.iters, Warmup: f.warmup, Check: f.check.n > 0, CheckRuns: f.check.n,
		// Every iteration's time (the slowest rank's) goes into --json,
		// so that a distribution, not only its summary, can be studied.
		KeepSamples: true,
	}
	// nccl-tests' order: each type, each op, each size, out of place then
	// in place.
	for _, dt := range dts {
		for _, op := range ops {
			for _, s := range sizes {
				for _, inplace := range modes {
					spec.Points = append(spec.Points, job.Point{
						Collective: f.coll, Bytes: s, DType: dt.String(), Op: op, Root: f.root, InPlace: inplace,
					})
				}
			}
		}
	}
	return spec, spec.Validate()
}

// rowSink takes the run's records: each a row of the table (and a record
// of --json), and, on a terminal, a status line between rows saying the
// run is measuring the next one (a large size can take a while), which
// the next row replaces. Off a terminal the table is all.
type rowSink struct {
	mu     sync.Mutex
	rows   int
	table  *nccltests.Table
	json   *results.Writer
	status bool
	w      io.Writer
	points int
	cycles int
}

func (k *rowSink) emit(r *results.Record) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Each cycle is a round of the same points (Measure says which),
	// so that report pools them as it pools a sweep's rounds.
	k.rows++
	k.clearLocked()
	k.table.Add(r)
	if k.status {
		fmt.Fprint(k.w, runStatus(k.rows, k.points, k.cycles))
	}
	if k.json != nil {
		return k.json.Write(r)
	}
	return nil
}

func (k *rowSink) clearStatus() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.clearLocked()
}

func (k *rowSink) clearLocked() {
	if k.status {
		fmt.Fprint(k.w, clearLine)
	}
}

func runSpec(cmd *cobra.Command, spec *job.Spec, f *runFlags, stdout, stderr io.Writer) error {
	out, err := f.output(invocation(cmd))
	if err != nil {
		return usageError{err}
	}
	rank0 := isRank0(f.launcher)
	var jsonOut *results.Writer
	if f.jsonPath != "" && rank0 {
		if jsonOut, err = openRunJSON(f.jsonPath, spec, out.args); err != nil {
			return err
		}
		defer jsonOut.Close()
	}
	tableOut := stdout
	if !rank0 {
		tableOut = io.Discard
	}
	tw := nccltests.NewTable(tableOut, f.tableConfig(spec, out))
	if f.ncclJSON != "" && rank0 {
		doc, path, err := nccltests.CreateDoc(f.ncclJSON, out.args, time.Now())
		if err != nil {
			return usageError{fmt.Errorf("-J/--output_file: %w", err)}
		}
		fmt.Fprintf(tableOut, "# Writing JSON output to %s\n", path)
		tw.SetDoc(doc)
	}
	status := statusWriter(f.launcher, stderr)
	sink := &rowSink{table: tw, json: jsonOut, status: rank0 && status != nil, w: status, points: len(spec.Points), cycles: f.cycles}
	emit := sink.emit
	// Every cycle runs in one job, over one mesh, as nccl-tests' -N does.
	spec.Cycles = f.cycles
	if f.cycles == 0 {
		spec.Cycles = -1 // until interrupted
	}
	if f.launcher == "env" {
		err = harness.RunRank(cmd.Context(), spec, os.Getenv, emit)
	} else {
		err = launch.Launch(cmd.Context(), launch.Options{Spec: spec, Args: []string{"worker"}, Emit: emit, Stderr: stderr})
	}
	sink.clearStatus()
	bwFailed, docErr := tw.Footer(err)
	if err != nil && cmd.Context().Err() != nil {
		// Ctrl-C, the way out of -N 0: not a failure of the run, but not a
		// finished one either (--json keeps it marked incomplete).
		fmt.Fprintf(stderr, "distbench: interrupted; the %d row(s) measured are kept\n", sink.rows)
		return exitError{130}
	}
	if err != nil {
		return err
	}
	if docErr != nil {
		return fmt.Errorf("-J/--output_file: %w", docErr)
	}
	if jsonOut != nil {
		// Only a run that measured every point is marked finished.
		if err := jsonOut.Finish(); err != nil {
			return err
		}
	}
	if tw.Wrong() > 0 {
		fmt.Fprintf(stderr, "distbench: %d wrong elements\n", tw.Wrong())
		return exitError{1}
	}
	if bwFailed {
		fmt.Fprintf(stderr, "distbench: average bus bandwidth below 90%% of NCCL_TESTS_MIN_BW %s GB/s\n", os.Getenv("NCCL_TESTS_MIN_BW"))
		return exitError{1}
	}
	return nil
}

// invocation is the command line as parsed: the command's path and every
// flag that was set, in a form that runs again as it is.
func invocation(cmd *cobra.Command) []string {
	args := strings.Fields(cmd.CommandPath())
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	return args
}

// specDevice is --device as a spec holds it: "" for the host, so that host
// runs' records and point ids stay as they were before devices existed.
func specDevice(d string) string {
	if d == "cpu" {
		return ""
	}
	return d
}
