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
	"github.com/distbench/distbench/internal/units"
	"github.com/distbench/distbench/reports/osu"
	"github.com/distbench/distbench/results"
)

// p2pTest is one of OSU's point-to-point benchmarks (v7.4,
// c/mpi/pt2pt/standard/osu_*.c) and its defaults (c/util/osu_util.h).
type p2pTest struct {
	name, collective string
	title            string // OSU's BENCHMARK, without "OSU MPI"
	osu              string // OSU's program
	column           string // the figure's column header
	minSize          int64  // OSU's default smallest size
	// OSU's iterations and warm-up (skip) for sizes up to osu.LargeSize,
	// and above it.
	iters, skip, itersLarge, skipLarge int
	windowed                           bool
}

var p2pTests = []p2pTest{
	// LAT_LOOP_SMALL/LARGE, LAT_SKIP_SMALL/LARGE; min 0 for LAT.
	{"latency", "p2p-latency", "Latency Test", "osu_latency", "Latency (us)", 0, 10000, 100, 1000, 10, false},
	// BW_LOOP_SMALL/LARGE, BW_SKIP_SMALL/LARGE; MIN_MESSAGE_SIZE 1.
	{"bw", "p2p-bw", "Bandwidth Test", "osu_bw", "Bandwidth (MB/s)", 1, 100, 10, 20, 2, true},
	{"bibw", "p2p-bibw", "Bi-Directional Bandwidth Test", "osu_bibw", "Bandwidth (MB/s)", 1, 100, 10, 20, 2, true},
}

// p2pMaxSize is the largest -m MAX distbench accepts.
const p2pMaxSize = 1 << 30

type p2pFlags struct {
	test                        p2pTest
	strategy, sizes, jsonPath   string
	link, launcher              string
	np, iters, warmup, window   int
	itersSet, warmupSet, winSet bool
	timeout                     time.Duration
	opts                        []string
	check                       bool
}

func newP2PCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "p2p",
		Short: "Point-to-point latency and bandwidth between two ranks, as OSU's osu_latency, osu_bw and osu_bibw",
		Long: `p2p measures ranks 0 and 1 with OSU micro-benchmarks' definitions (v7.4) and
prints OSU's output, so that figures can be set beside osu_latency, osu_bw
and osu_bibw's. The messages go through the strategy's Send/Recv and
ISend/IRecv (distbench's TCP mesh, shaped by --link), not MPI.

Where distbench differs from OSU:
  - sizes are bytes of uint8 (OSU's MPI_CHAR); a size of 0 is skipped, as
    OSU v7.4 does (it skips sizes of no elements), so lists start at 1;
  - -m also takes units (4KiB:1MiB) and MIN 0; MAX is at most 1GiB
    (OSU bounds memory with -M instead);
  - --check (on by default) checks one untimed exchange per size before the
    warm-up; OSU's -c checks every iteration and is off by default;
  - each size starts after a barrier of all ranks; only rank 0's clock
    counts, as OSU's; --json records also give per-iteration statistics
    (median, p95, confidence interval) that OSU does not print;
  - OSU's -d (device buffers), -M, -G, -P, -T, -I and -z are not offered.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("p2p: name a test: latency, bw or bibw (see 'distbench p2p --help')")
			}
			return usagef("p2p: unknown test %q (accepted: latency, bw, bibw)", args[0])
		},
		RunE: func(*cobra.Command, []string) error { return nil }, // Args refuses every call
	}
	for _, t := range p2pTests {
		cmd.AddCommand(newP2PTestCmd(t, stdout, stderr))
	}
	return cmd
}

func newP2PTestCmd(t p2pTest, stdout, stderr io.Writer) *cobra.Command {
	f := &p2pFlags{test: t}
	def := fmt.Sprintf("OSU's defaults: sizes %d to %d bytes, doubling; %d iterations and %d warm-up up to %d bytes, %d and %d above",
		t.minSize, osu.MaxSize, t.iters, t.skip, osu.LargeSize, t.itersLarge, t.skipLarge)
	cmd := &cobra.Command{
		Use:   t.name,
		Short: "OSU's " + t.osu + ": " + strings.ToLower(t.title),
		Long:  p2pLong(t) + "\n\n" + def + ".\nSee 'distbench p2p --help' for where distbench differs from OSU.",
		Example: fmt.Sprintf(`  distbench p2p %s -m 0:1048576
  distbench p2p %s --strategy tree --link 10g --json p2p.jsonl
  mpirun -n 2 -x DISTBENCH_TOKEN distbench p2p %s --launcher env`, t.name, t.name, t.name),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			f.itersSet, f.warmupSet, f.winSet = fl.Changed("iterations"), fl.Changed("warmup"), fl.Changed("window-size")
			spec, err := f.spec()
			if err != nil {
				return usageError{err}
			}
			localRanks := spec.NP
			if f.launcher == "env" {
				localRanks = 1
			}
			if err := spec.CheckMemory(localRanks); err != nil {
				return usageError{err}
			}
			return runP2P(cmd, spec, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.sizes, "message-size", "m", "", "sizes MIN:MAX in bytes (or MAX, MIN:, :MAX; units accepted, e.g. 4KiB:1MiB), doubling from MIN")
	fl.IntVarP(&f.iters, "iterations", "i", 0, fmt.Sprintf("timed iterations of every size (default: OSU's %d, %d above %d bytes)", t.iters, t.itersLarge, osu.LargeSize))
	fl.IntVarP(&f.warmup, "warmup", "x", 0, fmt.Sprintf("untimed warm-up iterations of every size (default: OSU's %d, %d above %d bytes)", t.skip, t.skipLarge, osu.LargeSize))
	if t.windowed {
		fl.IntVarP(&f.window, "window-size", "W", job.DefaultWindow, "non-blocking operations in flight per iteration")
	}
	fl.StringVar(&f.strategy, "strategy", "ring", "strategy whose Send/Recv carry the messages (see 'distbench strategies')")
	fl.IntVar(&f.np, "np", 2, "number of ranks; OSU's tests take exactly 2")
	fl.BoolVarP(&f.check, "check", "c", true, "check one untimed exchange per size (any wrong byte fails the run)")
	fl.StringVar(&f.jsonPath, "json", "", "append one JSON record per size to this file (JSON Lines, readable by report and compare)")
	fl.DurationVar(&f.timeout, "timeout", collective.DefaultTimeout, "deadline of every operation")
	fl.StringVar(&f.link, "link", "", "shape every rank's NIC, e.g. 10Gbit,25us or a preset (1g, 10g, 25g, 100g, lan, wan)")
	fl.StringArrayVar(&f.opts, "opt", nil, "strategy option key=value (repeatable)")
	fl.StringVar(&f.launcher, "launcher", "local", "local: start --np worker processes here; env: this process is one rank started by mpirun, srun or a Kubernetes Job")
	return cmd
}

func p2pLong(t p2pTest) string {
	switch t.name {
	case "latency":
		return `latency is OSU's osu_latency: rank 0 sends a message to rank 1 and receives
it back (blocking Send, then Recv); the latency is half the round trip,
averaged over the timed iterations: t_total / (2 × iterations), in us.`
	case "bw":
		return `bw is OSU's osu_bw: per iteration rank 0 issues a window (-W) of non-blocking
sends, rank 1 a window of non-blocking receives; when all are done rank 1
sends rank 0 a one-byte ack. Bandwidth, in MB/s (1e6 bytes):
size × window × iterations / 1e6 / t_total.`
	}
	return `bibw is OSU's osu_bibw: per iteration both ranks issue a window (-W) of
non-blocking receives, then a window of non-blocking sends, and wait for all.
Bandwidth counts both directions, in MB/s (1e6 bytes):
2 × size × window × iterations / 1e6 / t_total.`
}

// parseMessageSizes reads OSU's -m: "MAX", "MIN:MAX", "MIN:" or ":MAX",
// each a size in bytes (units accepted), over the defaults lo and hi.
func parseMessageSizes(s string, lo, hi int64) (int64, int64, error) {
	if s == "" {
		return lo, hi, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("-m %q: %s (accepted: MAX, MIN:MAX, MIN: or :MAX in bytes, such as 1:4194304 or 4KiB:1MiB)", s, why)
	}
	minS, maxS, colon := strings.Cut(s, ":")
	if !colon {
		minS, maxS = "", s
	}
	if strings.Contains(maxS, ":") {
		return 0, 0, bad("more than one ':'")
	}
	if minS == "" && maxS == "" {
		return 0, 0, bad("no size")
	}
	var err error
	if minS != "" {
		if lo, err = units.ParseBytes(minS); err != nil {
			return 0, 0, bad(fmt.Sprintf("MIN %q is not a size", minS))
		}
	}
	if maxS != "" {
		if hi, err = units.ParseBytes(maxS); err != nil {
			return 0, 0, bad(fmt.Sprintf("MAX %q is not a size", maxS))
		}
	}
	if hi > p2pMaxSize {
		return 0, 0, bad(fmt.Sprintf("MAX %d bytes is above the limit of %d (1GiB)", hi, p2pMaxSize))
	}
	if lo > hi {
		return 0, 0, bad(fmt.Sprintf("MIN %d is larger than MAX %d", lo, hi))
	}
	return lo, hi, nil
}

func (f *p2pFlags) spec() (*job.Spec, error) {
	t := f.test
	if _, err := collective.Lookup(f.strategy); err != nil {
		return nil, err
	}
	if f.np != 2 {
		return nil, fmt.Errorf("--np %d: OSU's point-to-point tests take exactly two processes (accepted: 2)", f.np)
	}
	if f.launcher != "local" && f.launcher != "env" {
		return nil, fmt.Errorf("--launcher %q (accepted: local, env)", f.launcher)
	}
	if f.timeout < job.MinTimeout {
		return nil, fmt.Errorf("--timeout %v: too short (accepted: %v or more)", f.timeout, job.MinTimeout)
	}
	if f.itersSet && f.iters < 1 {
		return nil, fmt.Errorf("-i %d: must be at least 1", f.iters)
	}
	if f.warmupSet && f.warmup < 0 {
		return nil, fmt.Errorf("-x %d: must be 0 or more", f.warmup)
	}
	if t.windowed && (f.window < 1 || f.window > job.MaxWindow) {
		return nil, fmt.Errorf("-W %d: out of range (accepted: 1 to %d)", f.window, job.MaxWindow)
	}
	lo, hi, err := parseMessageSizes(f.sizes, t.minSize, osu.MaxSize)
	if err != nil {
		return nil, err
	}
	sizes := osu.Sizes(lo, hi)
	if len(sizes) == 0 {
		return nil, fmt.Errorf("-m %q: no size to measure: 0 bytes is skipped, as OSU does (accepted: MAX of 1 or more)", f.sizes)
	}
	opts, err := parseOpts(f.opts)
	if err != nil {
		return nil, err
	}
	spec := &job.Spec{
		Strategy: f.strategy, NP: f.np, Options: opts, Link: f.link, Timeout: f.timeout,
		Iters: t.iters, Warmup: t.skip, Check: f.check, KeepSamples: true,
	}
	for _, s := range sizes {
		p := job.Point{Collective: t.collective, Bytes: s, DType: collective.Uint8.String()}
		p.Iters, p.Warmup = t.iters, t.skip
		if s > osu.LargeSize {
			p.Iters, p.Warmup = t.itersLarge, t.skipLarge
		}
		if f.itersSet {
			p.Iters = f.iters // OSU's -i sets both, small and large
		}
		if f.warmupSet {
			p.Warmup = f.warmup
		}
		if t.windowed {
			p.Window = f.window
		}
		spec.Points = append(spec.Points, p)
	}
	return spec, spec.Validate()
}

func runP2P(cmd *cobra.Command, spec *job.Spec, f *p2pFlags, stdout, stderr io.Writer) error {
	rank0 := isRank0(f.launcher)
	var jsonOut *results.Writer
	if f.jsonPath != "" && rank0 {
		var err error
		if jsonOut, err = openRunJSON(f.jsonPath, spec, nil); err != nil {
			return err
		}
		defer jsonOut.Close()
	}
	out := stdout
	if !rank0 {
		out = io.Discard
	}
	w := bufio.NewWriter(out)
	h := osu.P2PHeader{Title: f.test.title, Program: f.test.osu, Column: f.test.column, Strategy: spec.Strategy, Link: spec.Link}
	if f.test.windowed && len(spec.Points) > 0 {
		h.Window = spec.Points[0].WindowOf()
	}
	osu.WriteP2PHeader(w, h)
	w.Flush()
	var mu sync.Mutex
	var wrong int64
	emit := func(r *results.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if r.Error == "" {
			osu.WriteP2PRow(w, r)
			w.Flush()
			wrong += max(r.Wrong, 0)
		}
		if jsonOut != nil {
			return jsonOut.Write(r)
		}
		return nil
	}
	var err error
	if f.launcher == "env" {
		err = harness.RunRank(cmd.Context(), spec, os.Getenv, emit)
	} else {
		err = launch.Launch(cmd.Context(), launch.Options{Spec: spec, Args: []string{"worker"}, Emit: emit, Stderr: stderr})
	}
	if err != nil {
		return err
	}
	if jsonOut != nil {
		if err := jsonOut.Finish(); err != nil {
			return err
		}
	}
	if wrong > 0 {
		fmt.Fprintf(stderr, "distbench: %d wrong bytes\n", wrong)
		return exitError{1}
	}
	return nil
}
