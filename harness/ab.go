package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/results"
)

// ABBuild is one of the two builds an A/B run measures.
type ABBuild struct {
	// Name is the build's run directory under ABOptions.Dir ("base",
	// "new") and its label in the progress display.
	Name string
	// Exe is the build's distbench binary; its "worker" subcommand runs
	// the ranks.
	Exe string
}

// ABOptions configure [AB].
type ABOptions struct {
	// Plan holds collective groups only: training and peers measure
	// nothing that A/B could pair round by round.
	Plan *plan.Expanded
	// Dir receives one run directory per build, Dir/<Name>.
	Dir string
	// Env describes the session; AB sets each run's Planned, LeftOut, Exe
	// and Commit (that of its binary).
	Env results.Env
	// Base and New are the builds; their names must differ.
	Base, New ABBuild
	// PerPoint makes every point of a round its own pair of launches, the
	// two builds' measurements of it a fraction of a second apart instead
	// of a whole group's launch: slower (a launch costs tens of
	// milliseconds) but blind to load that changes from second to second.
	PerPoint bool
	// Args make a binary a worker ("worker").
	Args     []string
	Progress Progress
	Stderr   io.Writer
	Grace    time.Duration
}

// ABResult is what an A/B run did, per build.
type ABResult struct {
	Base, New   SweepResult
	Interrupted bool
	Elapsed     time.Duration
}

// OK reports an A/B run in which both builds measured everything.
func (r *ABResult) OK() bool { return !r.Interrupted && r.Base.OK() && r.New.OK() }

// AB measures a plan with two builds interleaved: for every round and
// launch group, one build's launch and then the other's, back to back, the
// order alternating from group to group and round to round. A burst of
// load, thermal drift or a neighbour's job then reaches both builds alike
// within a pair of launches, and a comparison of round r's base median with
// round r's new median (reports.PairedCompare) is paired: the drift that
// makes two separate sweeps differ by 20% on a shared machine cancels.
// Each build's records go to its own run directory, an ordinary run
// (report, compare and --resume-free reading work on it), so that what A/B
// measured can be looked at as two sweeps too. An interrupted A/B keeps
// everything, marked incomplete, like a sweep; it cannot be resumed, since
// a resumed half would lose its pairing.
func AB(ctx context.Context, o ABOptions) (*ABResult, error) {
	start := time.Now()
	exp := o.Plan
	if o.Base.Name == o.New.Name || o.Base.Name == "" || o.New.Name == "" {
		return nil, fmt.Errorf("harness: ab: builds need distinct names, have %q and %q", o.Base.Name, o.New.Name)
	}
	for _, g := range exp.Groups {
		if g.Peer != nil || (g.Spec != nil && g.Spec.Train != nil) {
			return nil, fmt.Errorf("harness: ab: group %s: only collective groups can be paired", g.Name())
		}
	}
	prog, stderr := outputs(o.Progress, o.Stderr)
	res := &ABResult{}
	var sw [2]*sweeper
	for k, b := range []ABBuild{o.Base, o.New} {
		dir := filepath.Join(o.Dir, b.Name)
		if err := savePlan(dir, exp.Plan); err != nil {
			return nil, err
		}
		env := o.Env
		env.Planned, env.LeftOut = exp.IDs(), exp.Notes
		env.Exe, env.Commit = b.Exe, results.CommitOf(b.Exe)
		w, err := results.NewWriter(dir, env)
		if err != nil {
			return nil, err
		}
		defer w.Close()
		r := &res.Base
		if k == 1 {
			r = &res.New
		}
		*r = SweepResult{Planned: exp.NumPoints(), Rounds: exp.Rounds()}
		so := SweepOptions{Plan: exp, Dir: dir, Env: env, Exe: b.Exe, Args: o.Args, Progress: prog, Stderr: stderr, Grace: o.Grace}
		s, _ := newSweeper(so, w, prog, stderr, r, nil)
		s.label = b.Name
		sw[k] = s
	}
	prog.Start(2*exp.NumMeasurements(), 0)
	defer func() {
		sw[0].count()
		sw[1].count()
		res.Elapsed = time.Since(start)
		res.Base.Elapsed, res.New.Elapsed = res.Elapsed, res.Elapsed
	}()
	for _, n := range exp.Notes {
		prog.Note("skipped: " + n)
	}
	rounds := exp.Rounds()
	pair := 0
ab:
	for round := 1; round <= rounds; round++ {
		if rounds > 1 {
			prog.Round(round, rounds)
		}
		for _, g := range exp.Groups {
			if round > g.Rounds {
				continue
			}
			pending := make([]plan.PlannedPoint, len(g.Points))
			for i, p := range g.Points {
				p.Round, p.Rounds = round, g.Rounds
				pending[i] = p
			}
			batches := [][]plan.PlannedPoint{pending}
			if o.PerPoint {
				batches = batches[:0]
				for i := range pending {
					batches = append(batches, pending[i:i+1])
				}
			}
			for _, batch := range batches {
				// ABBA: which build goes first alternates from pair to
				// pair, so that neither always runs on a machine its
				// twin warmed.
				order := [2]int{0, 1}
				if pair%2 == 1 {
					order = [2]int{1, 0}
				}
				pair++
				for _, k := range order {
					if ctx.Err() != nil {
						break ab
					}
					// Each launch records into its own copy of the points.
					if err := sw[k].group(ctx, g, round, clonePoints(batch)); err != nil {
						prog.Stop(true)
						return res, err
					}
					if sw[k].res.Interrupted {
						break ab
					}
				}
			}
		}
	}
	res.Interrupted = ctx.Err() != nil || res.Base.Interrupted || res.New.Interrupted
	res.Base.Interrupted, res.New.Interrupted = res.Interrupted, res.Interrupted
	prog.Stop(res.Interrupted)
	if res.Interrupted {
		return res, errors.Join(sw[0].w.Close(), sw[1].w.Close())
	}
	return res, errors.Join(sw[0].w.Finish(), sw[1].w.Finish())
}

func clonePoints(ps []plan.PlannedPoint) []plan.PlannedPoint {
	return append([]plan.PlannedPoint(nil), ps...)
}
