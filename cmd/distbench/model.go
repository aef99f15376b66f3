package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/costmodel"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/units"
	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

func newModelCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Predict collectives at world sizes and networks not measured here, calibrated on sweeps",
		Long: `model predicts how long distbench's collectives take where they were not
measured: closed forms and a simulator of the strategies' own schedules
(docs/guide/model.md), calibrated on sweeps' results.`,
	}
	cmd.AddCommand(newModelPredictCmd(stdout), newModelCalibrateCmd(stdout), newModelValidateCmd(stdout))
	return cmd
}

// linkShape parses a sweep's link text into rate and latency.
func linkShape(s string) (rateBits, latency float64, err error) {
	l, err := linkspec.ParseLink(s)
	if err != nil {
		return 0, 0, err
	}
	return float64(l.Rate), l.Latency.Seconds(), nil
}

// readPoints reads the model's points from run directories: the rounds of
// one point in several runs are pooled.
func readPoints(dirs []string) ([]costmodel.Point, error) {
	var recs []results.Record
	cores := 0
	for _, d := range dirs {
		run, err := results.ReadRun(d)
		if err != nil {
			return nil, err
		}
		if run.Env != nil && cores == 0 {
			cores = run.Env.Cores
		}
		recs = append(recs, run.Records...)
	}
	pts := costmodel.Points(recs, cores)
	if len(pts) == 0 {
		return nil, fmt.Errorf("no allreduce points of %s in %s", strings.Join(costmodel.Names(), ", "), strings.Join(dirs, ", "))
	}
	return pts, nil
}

func newModelCalibrateCmd(stdout io.Writer) *cobra.Command {
	var out string
	var seed uint64
	cmd := &cobra.Command{
		Use:   "calibrate RUN_DIR...",
		Short: "Fit the model's parameters per link and algorithm to sweeps' results",
		Long: `calibrate fits α (per message), κ (CPU per byte sent), γ (per byte
reduced) and δ (a wake-up on an oversubscribed host) of every algorithm on
every link of the sweeps, the wire's β and latency held at the link's shape,
by robust least squares, and one crowd for them all: α and a wake-up grow as
(ranks per core)^crowd where ranks outnumber the machine's cores. Each
parameter gets a 95% bootstrap interval from the points' rounds. It prints the fit's median error over latency-bound and
bandwidth-bound points, and writes the calibration (JSON) to -o, by default
RUN_DIR/` + costmodel.CalibrationFile + ` of the first run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pts, err := readPoints(args)
			if err != nil {
				return err
			}
			fits, err := costmodel.FitAll(pts, linkShape, seed)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(args[0], costmodel.CalibrationFile)
			}
			if err := costmodel.WriteCalibration(out, costmodel.Calibration{Runs: args, Fits: fits}); err != nil {
				return err
			}
			writeFits(stdout, fits)
			fmt.Fprintf(stdout, "calibration: %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "calibration file to write (default RUN_DIR/"+costmodel.CalibrationFile+")")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the bootstrap")
	return cmd
}

func writeFits(w io.Writer, fits []costmodel.Fit) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "link\talgo\tpoints\tβ ns/B (link)\tα µs [95% CI]\tκ ns/B [95% CI]\tγ ns/B [95% CI]\tδ µs [95% CI]\tcrowd [95% CI]\tlatency-bound err %\tbandwidth-bound err %\t")
	for _, f := range fits {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.2f [%.2f, %.2f]\t%.3f [%.3f, %.3f]\t%.3f [%.3f, %.3f]\t%.2f [%.2f, %.2f]\t%.1f [%.1f, %.1f]\t%s\t%s\t\n", f.Link, f.Algo, f.Points, f.Params.Beta*1e9,
			f.Params.Alpha*1e6, f.Lo.Alpha*1e6, f.Hi.Alpha*1e6, f.Params.Kappa*1e9, f.Lo.Kappa*1e9, f.Hi.Kappa*1e9,
			f.Params.Gamma*1e9, f.Lo.Gamma*1e9, f.Hi.Gamma*1e9, f.Params.Step*1e6, f.Lo.Step*1e6, f.Hi.Step*1e6,
			f.Params.Crowd, f.Lo.Crowd, f.Hi.Crowd, pct(f.ErrLatencyPct), pct(f.ErrBandwidthPct))
	}
	tw.Flush()
}

func pct(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func newModelValidateCmd(stdout io.Writer) *cobra.Command {
	var train string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "validate RUN_DIR...",
		Short: "Calibrate on part of sweeps' points and predict the rest",
		Long: `validate calibrates on the points --train selects and predicts the others,
printing the median, geometric mean and largest absolute percentage error
per algorithm and link. --train is np<=N (calibrate on world sizes up to N)
or every-other-size (calibrate on the 1st, 3rd, … size of each series).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pts, err := readPoints(args)
			if err != nil {
				return err
			}
			sel, err := trainSelector(train, pts)
			if err != nil {
				return usagef("model validate: %v", err)
			}
			hs, err := costmodel.Validate(pts, sel, linkShape, 1)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "link\talgo\theld out\tmedian |err| %%\tgeomean |err| %%\tmax |err| %%\t\n")
			for _, h := range hs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t\n", h.Link, h.Algo, h.N, h.MedianPct, h.GeomeanPct, h.MaxPct)
			}
			tw.Flush()
			if len(hs) > 0 { // one Crowd for every fit: the machine's
				f := hs[0].Fit
				fmt.Fprintf(stdout, "crowd fitted on the training points: %.1f [%.1f, %.1f]\n", f.Params.Crowd, f.Lo.Crowd, f.Hi.Crowd)
			}
			if verbose {
				for _, h := range hs {
					for _, e := range h.Errors {
						fmt.Fprintf(stdout, "%s %s np=%d %s: measured %.1f us, predicted %.1f us, %+.1f%%\n",
							h.Link, h.Algo, e.NP, units.FormatBytes(e.Bytes), e.Measured*1e6, e.Pred*1e6, e.ErrPct)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&train, "train", "np<=4", "points to calibrate on: np<=N or every-other-size")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every held-out point")
	return cmd
}

// trainSelector parses --train.
func trainSelector(s string, pts []costmodel.Point) (func(costmodel.Point) bool, error) {
	if s == "every-other-size" {
		sizes := map[int64]bool{}
		for _, p := range pts {
			sizes[p.Bytes] = true
		}
		rank := rankOf(sizes)
		return func(p costmodel.Point) bool { return rank[p.Bytes]%2 == 0 }, nil
	}
	if v, ok := strings.CutPrefix(s, "np<="); ok {
		n, err := strconv.Atoi(v)
		if err == nil && n >= 2 {
			return func(p costmodel.Point) bool { return p.NP <= n }, nil
		}
	}
	return nil, fmt.Errorf("--train %q (accepted: np<=N with N ≥ 2, or every-other-size)", s)
}

func rankOf(set map[int64]bool) map[int64]int {
	var xs []int64
	for x := range set {
		xs = append(xs, x)
	}
	for i := range xs { // a few sizes: insertion sort
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
	r := map[int64]int{}
	for i, x := range xs {
		r[x] = i
	}
	return r
}

// defaultPredictAlgos is what predict compares without --algo.
const defaultPredictAlgos = "ring,tree,ps,nccl/ring,nccl/tree"

type predictFlags struct {
	nps, sizes, algos         string
	link, intra, hosts, calib string
	plot, format              string
	slowNIC, slowRank, delays string
	oversub                   float64
	alpha                     time.Duration
	gamma                     float64
}

func newModelPredictCmd(stdout io.Writer) *cobra.Command {
	f := &predictFlags{}
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Predict time and bus bandwidth per algorithm, world size and size, and the winner of each",
		Long: `predict prints the predicted time (µs) and bus bandwidth (GB/s) of each
algorithm at each world size and size, and the predicted winner of each
(np, size). Ring schedules are simulated at any np; the others where the
simulation stays small, and from their closed forms past that (the method
column says which). Where --hosts has several ranks per host, the
hierarchical allreduces (ring/hier, tree/hier) are listed too, placed on
those hosts. Without --calibration the software costs come from
--alpha and --gamma and every prediction is marked as an extrapolation (*);
with it, the fit for the link (or, failing that, the algorithm's software
costs from another link) is used, and points outside the fitted range are
marked.`,
		Example: `  distbench model predict --np 8,64,512,4096 --sizes 4KiB,1MiB,64MiB,1GiB --link 100Gbit,2us --hosts 512x8
  distbench model predict --np 8 --sizes 1MiB --link 10Gbit,25us --calibration runs/x/` + costmodel.CalibrationFile,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := f.grid()
			if err != nil {
				return usagef("model predict: %v", err)
			}
			preds, err := g.Predict()
			if err != nil {
				return err
			}
			if f.format == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(preds)
			}
			writePredictions(stdout, g, preds)
			if f.plot != "" {
				if err := reports.PredictionPlot(f.plot, g.LinkName, preds); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "plot: %s\n", f.plot)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nps, "np", "8,64,512,4096", "world sizes, comma-separated")
	fl.StringVar(&f.sizes, "sizes", "4KiB,1MiB,64MiB,1GiB", "sizes, comma-separated")
	fl.StringVar(&f.algos, "algo", "", "algorithms, comma-separated (default "+defaultPredictAlgos+
		", and ring/hier,tree/hier where --hosts has several ranks per host): "+strings.Join(costmodel.Names(), ", "))
	fl.StringVar(&f.link, "link", "100Gbit,2us", "the NIC: RATE,LATENCY as --link of sweep")
	fl.StringVar(&f.intra, "intra", "", "links within a host, RATE,LATENCY (default: as --link)")
	fl.StringVar(&f.hosts, "hosts", "512x8", "HOSTSxRANKS_PER_HOST")
	fl.Float64Var(&f.oversub, "oversub", 1, "the spine's oversubscription, ≥ 1 (2 for 2:1)")
	fl.StringVar(&f.calib, "calibration", "", "calibration file from `distbench model calibrate`")
	fl.DurationVar(&f.alpha, "alpha", 10*time.Microsecond, "software cost per message, uncalibrated")
	fl.Float64Var(&f.gamma, "gamma", 0.1, "reduction cost, ns per byte, uncalibrated")
	fl.StringVarP(&f.plot, "plot", "p", "", "also draw time and bus bandwidth to this PNG file")
	fl.StringVar(&f.format, "format", "table", "table or json")
	fl.StringVar(&f.slowNIC, "slow-nic", "", "HOST=FACTOR: that host's NIC FACTOR times slower")
	fl.StringVar(&f.slowRank, "slow-rank", "", "RANK=FACTOR: that rank's software FACTOR times slower")
	fl.StringVar(&f.delays, "delays-from", "", "RUN_DIR: draw each rank's start delay from how late ranks arrived there")
	return cmd
}

// grid checks the flags and makes the model's question of them: the
// cluster's shape, the algorithms, then what perturbs or calibrates them.
func (f *predictFlags) grid() (*costmodel.Grid, error) {
	g := &costmodel.Grid{Oversub: f.oversub, Alpha: f.alpha.Seconds(), Gamma: f.gamma * 1e-9}
	if err := f.cluster(g); err != nil {
		return nil, err
	}
	if err := f.algorithms(g); err != nil {
		return nil, err
	}
	if f.oversub < 1 {
		return nil, fmt.Errorf("--oversub %v: want ≥ 1 (1 for none, 2 for 2:1)", f.oversub)
	}
	if f.gamma < 0 || f.alpha < 0 {
		return nil, fmt.Errorf("--alpha and --gamma: want values ≥ 0")
	}
	if err := f.perturbations(g); err != nil {
		return nil, err
	}
	if f.format != "table" && f.format != "json" {
		return nil, fmt.Errorf("--format %q (accepted: table, json)", f.format)
	}
	if f.calib != "" {
		var err error
		if g.Cal, err = costmodel.ReadCalibration(f.calib); err != nil {
			return nil, fmt.Errorf("--calibration: %v", err)
		}
	}
	return g, nil
}

// cluster sets the grid's world sizes, sizes, links and hosts.
func (f *predictFlags) cluster(g *costmodel.Grid) error {
	var err error
	if g.NPs, err = parseInts(f.nps); err != nil {
		return fmt.Errorf("--np %q: %v (accepted: world sizes ≥ 2, comma-separated)", f.nps, err)
	}
	for _, s := range strings.Split(f.sizes, ",") {
		b, err := units.ParseBytes(strings.TrimSpace(s))
		if err != nil || b < 4 {
			return fmt.Errorf("--sizes %q: bad size %q (accepted: sizes of at least 4B such as 4KiB, 1MiB, 1GiB, comma-separated)", f.sizes, s)
		}
		g.Sizes = append(g.Sizes, b)
	}
	rate, lat, err := linkShape(f.link)
	if err != nil || rate <= 0 {
		return fmt.Errorf("--link %q: want a rate and a latency such as 100Gbit,2us", f.link)
	}
	g.LinkName, g.Link = f.link, costmodel.FromLink(rate, lat, 0, 0)
	g.Intra = g.Link
	if f.intra != "" {
		r, l, err := linkShape(f.intra)
		if err != nil || r <= 0 {
			return fmt.Errorf("--intra %q: want a rate and a latency such as 400Gbit,1us", f.intra)
		}
		g.Intra = costmodel.FromLink(r, l, 0, 0)
	}
	h, p, ok := strings.Cut(f.hosts, "x")
	g.Hosts, err = strconv.Atoi(h)
	if err == nil {
		g.PerHost, err = strconv.Atoi(p)
	}
	if !ok || err != nil || g.Hosts < 1 || g.PerHost < 1 {
		return fmt.Errorf("--hosts %q: want HOSTSxRANKS_PER_HOST such as 512x8", f.hosts)
	}
	return nil
}

// algorithms sets the grid's algorithms: --algo's, or the default (with
// the hierarchical ones where a host has several ranks). It runs after
// cluster, whose hosts it reads.
func (f *predictFlags) algorithms(g *costmodel.Grid) error {
	algos := f.algos
	if algos == "" {
		algos = defaultPredictAlgos
		if g.PerHost > 1 { // what the hierarchy buys, beside the flat ones
			algos += ",ring/hier,tree/hier"
		}
	}
	for _, a := range strings.Split(algos, ",") {
		if _, err := costmodel.Lookup(strings.TrimSpace(a)); err != nil {
			return fmt.Errorf("--algo %q: unknown %q (accepted: %s)", algos, a, strings.Join(costmodel.Names(), ", "))
		}
		g.Algos = append(g.Algos, strings.TrimSpace(a))
	}
	for _, n := range g.NPs {
		if n > g.Hosts*g.PerHost {
			return fmt.Errorf("--np %d: more ranks than --hosts %s holds (%d)", n, f.hosts, g.Hosts*g.PerHost)
		}
	}
	return nil
}

// perturbations sets what makes the cluster uneven: a slow NIC, a slow
// rank, the ranks' start delays measured in a run.
func (f *predictFlags) perturbations(g *costmodel.Grid) error {
	var err error
	g.SlowNIC, g.SlowNICFactor, err = indexFactor("--slow-nic", "HOST", f.slowNIC)
	if err != nil {
		return err
	}
	g.SlowRank, g.SlowRankFactor, err = indexFactor("--slow-rank", "RANK", f.slowRank)
	if err != nil {
		return err
	}
	if f.delays != "" {
		run, err := results.ReadRun(f.delays)
		if err != nil {
			return fmt.Errorf("--delays-from: %v", err)
		}
		if g.Delays = costmodel.Lateness(run.Records); len(g.Delays) == 0 {
			return fmt.Errorf("--delays-from %s: no per-rank times in its records", f.delays)
		}
	}
	return nil
}

// indexFactor parses INDEX=FACTOR; empty is none (−1).
func indexFactor(flag, what, s string) (int, float64, error) {
	if s == "" {
		return -1, 0, nil
	}
	i, f, ok := strings.Cut(s, "=")
	n, err1 := strconv.Atoi(i)
	x, err2 := strconv.ParseFloat(f, 64)
	if !ok || err1 != nil || err2 != nil || n < 0 || x <= 0 {
		return 0, 0, fmt.Errorf("%s %q: want %s=FACTOR such as 3=4 (index ≥ 0, factor > 0)", flag, s, what)
	}
	return n, x, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("bad world size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// writePredictions prints the table of predictions and the winners.
func writePredictions(w io.Writer, g *costmodel.Grid, preds []costmodel.Prediction) {
	fmt.Fprintf(w, "# predicted allreduce on %s NICs, hosts of %d ranks, spine %g:1; * = extrapolation\n", g.LinkName, g.PerHost, max(1, g.Oversub))
	if g.SlowNIC >= 0 {
		fmt.Fprintf(w, "# host %d's NIC %g× slower\n", g.SlowNIC, g.SlowNICFactor)
	}
	if g.SlowRank >= 0 {
		fmt.Fprintf(w, "# rank %d's software %g× slower\n", g.SlowRank, g.SlowRankFactor)
	}
	if g.Delays != nil {
		fmt.Fprintf(w, "# start delays drawn from %d measured latenesses\n", len(g.Delays))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algo\tnp\tsize\ttime (us)\tbusbw (GB/s)\tmethod\t\t")
	for _, p := range preds {
		mark := ""
		if p.Extrapolated {
			mark = "* " + p.Why
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.3f\t%s\t%s\t\n", p.Algo, p.NP, units.FormatBytes(p.Bytes), p.Seconds*1e6, p.BusBW, p.Method, mark)
	}
	tw.Flush()
	// Where some algorithms are calibrated and others not, a ranking with
	// one of the latter is marked: its software costs are the defaults,
	// a guess, while the others' were measured. With no calibration at
	// all every row would be marked, and none is.
	calibrated := slices.ContainsFunc(preds, func(p costmodel.Prediction) bool { return !p.Guessed() })
	if calibrated {
		fmt.Fprintln(w, "\n# predicted winner per (np, size); ! marks a ranking with an algorithm never calibrated (its software costs are the defaults, a guess)")
	} else {
		fmt.Fprintln(w, "\n# predicted winner per (np, size)")
	}
	type at struct {
		algo  string
		np    int
		bytes int64
	}
	byAt := map[at]costmodel.Prediction{}
	for _, p := range preds {
		byAt[at{p.Algo, p.NP, p.Bytes}] = p
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if calibrated {
		fmt.Fprintln(tw, "np\tsize\twinner\trunner-up slower by\t\t")
	} else {
		fmt.Fprintln(tw, "np\tsize\twinner\trunner-up slower by\t")
	}
	for _, win := range costmodel.Winners(preds) {
		var unsure []string
		for _, a := range []string{win.Algo, win.Runner} {
			if p, ok := byAt[at{a, win.NP, win.Bytes}]; ok && calibrated && a != "" && p.Guessed() {
				unsure = append(unsure, a+" "+p.Why)
			}
		}
		row := fmt.Sprintf("%d\t%s\t%s\t%.0f%%\t", win.NP, units.FormatBytes(win.Bytes), win.Algo, 100*win.Margin)
		if calibrated {
			note := ""
			if len(unsure) > 0 {
				note = "! " + strings.Join(unsure, "; ")
			}
			row += note + "\t"
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}
