package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/internal/units"
	"github.com/distbench/distbench/results"
)

type soakFlags struct {
	strategies  []string
	nps         []int
	duration    time.Duration
	maxBytes    string
	seed        uint64
	checkpoints int
	timeout     time.Duration
	opts        []string
	jsonPath    string
}

func newSoakCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &soakFlags{}
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run checked allreduces of varied sizes for a long time; fail on a wrong element, an error or growth",
		Long: `soak runs, for every strategy and world size in turn, a launch of checked
allreduces of sizes drawn from one element to --max-bytes, every dtype and
op, back to back, each result compared element by element with the exact
answer. Every rank records its goroutines, live heap and resident set size
after a warm-up and at checkpoints after it. The exit status is 1 when any
launch fails, any element is wrong, or a rank's goroutines or memory grew
past the warm-up's (see the table's last column).`,
		Example: `  distbench soak --duration 30m --np 2,3,4,5,6,7,8   # the whole matrix, 30 minutes in all
  stress-ng --cpu 4 & distbench soak --strategy ring --np 4 --duration 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := f.specs()
			if err != nil {
				return usageError{err}
			}
			return runSoak(cmd, f, specs, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.strategies, "strategy", nil, "strategies, comma-separated (default: every strategy that runs here)")
	fl.IntSliceVar(&f.nps, "np", []int{2, 4, 8}, "world sizes, comma-separated")
	fl.DurationVar(&f.duration, "duration", 3*time.Minute, "total time, shared equally by the launches")
	fl.StringVar(&f.maxBytes, "max-bytes", "4MiB", "largest tensor")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the sequence of sizes, dtypes and ops")
	fl.IntVar(&f.checkpoints, "checkpoints", 6, "footprint checkpoints per launch, the first after the warm-up")
	fl.DurationVar(&f.timeout, "timeout", collective.DefaultTimeout, "deadline of every operation")
	fl.StringArrayVar(&f.opts, "opt", nil, "strategy option key=value (repeatable), given to every strategy that accepts it")
	fl.StringVar(&f.jsonPath, "json", "", "append each launch's record to this file (JSON Lines)")
	return cmd
}

// specs is one launch per strategy and world size, in that order.
func (f *soakFlags) specs() ([]*job.Spec, error) {
	strategies := f.strategies
	if len(strategies) == 0 {
		for _, name := range collective.Strategies() {
			st, _ := collective.Lookup(name)
			if a, ok := st.(collective.Availability); ok && a.Available() != nil {
				continue
			}
			strategies = append(strategies, name)
		}
	}
	maxBytes, err := units.ParseBytes(f.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("--max-bytes: %w", err)
	}
	if len(f.nps) == 0 {
		return nil, errors.New("--np: give at least one world size")
	}
	if f.duration <= 0 {
		return nil, fmt.Errorf("--duration %v: must be positive", f.duration)
	}
	if f.timeout <= 0 {
		return nil, fmt.Errorf("--timeout %v: must be positive", f.timeout)
	}
	opts, err := parseOpts(f.opts)
	if err != nil {
		return nil, err
	}
	each := f.duration / time.Duration(len(strategies)*len(f.nps))
	var specs []*job.Spec
	for _, s := range strategies {
		for _, np := range f.nps {
			spec := &job.Spec{
				Strategy: s, NP: np, Timeout: f.timeout, Iters: 1,
				Options: strategyOptions(s, opts),
				Soak:    &job.SoakConfig{Duration: each, MaxBytes: maxBytes, Seed: f.seed, Checkpoints: f.checkpoints},
			}
			if err := spec.Validate(); err != nil {
				return nil, err
			}
			specs = append(specs, spec)
		}
	}
	return specs, nil
}

// strategyOptions keeps the options that strategy s accepts, so that one
// --opt list can serve a matrix of strategies.
func strategyOptions(s string, opts map[string]string) map[string]string {
	st, _ := collective.Lookup(s)
	v, ok := st.(collective.OptionValidator)
	out := map[string]string{}
	for k, val := range opts {
		if !ok || v.ValidateOptions(map[string]string{k: val}) == nil {
			out[k] = val
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func runSoak(cmd *cobra.Command, f *soakFlags, specs []*job.Spec, stdout, stderr io.Writer) error {
	var jsonOut *os.File
	if f.jsonPath != "" {
		var err error
		if jsonOut, err = os.OpenFile(f.jsonPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return usageError{fmt.Errorf("--json: %w", err)}
		}
		defer jsonOut.Close()
	}
	fmt.Fprintf(stdout, "# distbench soak: %d launches of %v each, allreduces of 1 element to %s, seed %d\n",
		len(specs), specs[0].Soak.Duration, f.maxBytes, f.seed)
	fmt.Fprintf(stdout, "# footprints are the first checkpoint (after the warm-up) -> the last, summed over ranks\n")
	fmt.Fprintf(stdout, "# %-8s %3s %9s %10s %6s %15s %21s %21s  %s\n",
		"strategy", "np", "ops", "GB", "#wrong", "goroutines", "heap (MiB)", "rss (MiB)", "verdict")
	failed := 0
	for _, spec := range specs {
		var mu sync.Mutex
		var rec *results.Record
		err := launch.Launch(cmd.Context(), launch.Options{
			Spec: spec, Args: []string{"worker"}, Stderr: stderr,
			Emit: func(r *results.Record) error {
				mu.Lock()
				defer mu.Unlock()
				rec = r
				if jsonOut != nil {
					b, _ := json.Marshal(r)
					if _, err := jsonOut.Write(append(b, '\n')); err != nil {
						return err
					}
				}
				return nil
			},
		})
		verdict := soakVerdict(rec, err)
		if verdict != "ok" {
			failed++
		}
		fmt.Fprintln(stdout, soakRow(spec, rec, verdict))
		if cmd.Context().Err() != nil {
			fmt.Fprintf(stdout, "# incomplete: interrupted after %d of %d launches\n", failed, len(specs))
			return cmd.Context().Err()
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "distbench: soak: %d of %d launches failed\n", failed, len(specs))
		return exitError{1}
	}
	return nil
}

// Growth allowed before a rank's footprint counts as growing. A few
// goroutines come and go with the traffic (a wait reply's writer, a
// timer's), and pools fill and drain; a leak grows with the operations run,
// far past these.
const (
	soakGoroutineSlack = 4
	soakHeapSlack      = 16 << 20
	soakRSSSlack       = 64 << 20
)

// soakVerdict is "ok", or what is wrong with a launch.
func soakVerdict(rec *results.Record, err error) string {
	switch {
	case err != nil:
		return "FAILED: " + err.Error()
	case rec == nil || rec.Soak == nil:
		return "FAILED: no soak record"
	case rec.Error != "":
		return "FAILED: " + rec.Error
	case rec.Soak.Wrong > 0:
		return fmt.Sprintf("WRONG: %d elements", rec.Soak.Wrong)
	}
	var grew []string
	for _, pr := range rec.Soak.Ranks {
		if len(pr.Goroutines) < 2 {
			return fmt.Sprintf("FAILED: rank %d has %d checkpoints", pr.Rank, len(pr.Goroutines))
		}
		goroutines := make([]int64, len(pr.Goroutines))
		for i, g := range pr.Goroutines {
			goroutines[i] = int64(g)
		}
		if d := growth(goroutines); d > soakGoroutineSlack {
			grew = append(grew, fmt.Sprintf("rank %d goroutines +%d", pr.Rank, d))
		}
		if d := growth(pr.HeapBytes); d > max(pr.HeapBytes[0]/4, soakHeapSlack) {
			grew = append(grew, fmt.Sprintf("rank %d heap +%.1f MiB", pr.Rank, float64(d)/(1<<20)))
		}
		if d := growth(pr.RSSBytes); d > max(pr.RSSBytes[0]/4, soakRSSSlack) {
			grew = append(grew, fmt.Sprintf("rank %d rss +%.1f MiB", pr.Rank, float64(d)/(1<<20)))
		}
	}
	if len(grew) > 0 {
		return "GREW: " + strings.Join(grew, ", ")
	}
	return "ok"
}

// growth is how far the lowest checkpoint of the second half of a series
// stands above the highest of the first half. A leak lifts every later
// checkpoint above every earlier one; a pool that fills and drains (a
// sawtooth) does not, where a first-to-last difference would catch it at
// a peak.
func growth(series []int64) int64 {
	h := len(series) / 2
	return slices.Min(series[h:]) - slices.Max(series[:h])
}

func soakRow(spec *job.Spec, rec *results.Record, verdict string) string {
	name := spec.Strategy
	if o := spec.Options; len(o) > 0 {
		for k, v := range o {
			name += "," + k + "=" + v
		}
	}
	if rec == nil || rec.Soak == nil {
		return fmt.Sprintf("  %-8s %3d %9s %10s %6s %15s %21s %21s  %s", name, spec.NP, "-", "-", "-", "-", "-", "-", verdict)
	}
	s := rec.Soak
	var g0, g1 int
	var h0, h1, r0, r1 int64
	for _, pr := range s.Ranks {
		if n := len(pr.Goroutines); n > 0 {
			g0, g1 = g0+pr.Goroutines[0], g1+pr.Goroutines[n-1]
			h0, h1 = h0+pr.HeapBytes[0], h1+pr.HeapBytes[n-1]
			r0, r1 = r0+pr.RSSBytes[0], r1+pr.RSSBytes[n-1]
		}
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf("  %-8s %3d %9d %10.2f %6d %15s %21s %21s  %s", name, spec.NP, s.Ops, float64(s.Bytes)/1e9, s.Wrong,
		fmt.Sprintf("%d -> %d", g0, g1), fmt.Sprintf("%.1f -> %.1f", mib(h0), mib(h1)),
		fmt.Sprintf("%.1f -> %.1f", mib(r0), mib(r1)), verdict)
}
