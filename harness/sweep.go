package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/peers"
	"github.com/distbench/distbench/results"
)

// PlanFileName is where a sweep keeps its plan inside the run directory, so
// that --resume measures the same points.
const PlanFileName = "plan.yaml"

// SweepOptions configure [Sweep].
type SweepOptions struct {
	Plan *plan.Expanded
	// Dir is the run directory; it receives results.jsonl, results.bench
	// and plan.yaml.
	Dir string
	// Env describes this session (results.CaptureEnv); Sweep sets Planned.
	Env results.Env
	// Resume skips what Dir has finished: every round of a point already
	// recorded without error (results.DoneRounds).
	Resume bool
	// Exe and Args start a worker, as in launch.Options.
	Exe  string
	Args []string
	// Progress shows the sweep; nil shows nothing.
	Progress Progress
	// Stderr receives the workers' and peers' own output; default
	// Progress.Output(), or os.Stderr.
	Stderr io.Writer
	// Grace is launch.Options.Grace.
	Grace time.Duration
	// Launch runs one launch; nil is launch.Launch, which starts the
	// processes. Inside an engine's allocation it is Allocation.Launch.
	Launch func(context.Context, launch.Options) error
}

// SweepResult counts what a sweep did, in points: a point measured in rounds
// counts once, by the worst of its rounds.
type SweepResult struct {
	Planned  int // points in the plan
	Rounds   int // the plan's rounds
	Resumed  int // finished by an earlier session and not measured again
	Measured int // measured now (every round, counting earlier sessions'), without error
	Failed   int // a round recorded with an error
	Stopped  int // cut short by the interruption (Incomplete, no error, or rounds left unmeasured)
	Skipped  int // recorded as skipped: cannot run here
	Wrong    int // measured, but with wrong elements
	// Interrupted is set when ctx ended the sweep before the plan did.
	Interrupted bool
	Elapsed     time.Duration
}

// OK reports a sweep that measured everything it was asked to, correctly.
func (r *SweepResult) OK() bool {
	return !r.Interrupted && r.Failed == 0 && r.Stopped == 0 && r.Skipped == 0 && r.Wrong == 0
}

// Sweep runs an expanded plan into a run directory: one launch per group and
// round, every record written (and synced) as it arrives. A plan in several
// rounds runs round 1 of every group, then round 2 of every group, and so
// on (training runs and peers only in round 1), each round of a point its
// own record. A launch that fails has its unfinished points recorded as
// failed, and the sweep goes on with the next. When ctx ends, the sweep stops
// at once, keeps everything, records the point in flight as incomplete and
// leaves the run unfinished, for a report or --resume, which measures only
// the rounds not yet recorded. Only a sweep that went through its whole plan
// marks the run finished (results.Writer.Finish).
//
// The error is for what stops a sweep from keeping results (the run
// directory cannot be written); failed points are counted in SweepResult.
func Sweep(ctx context.Context, o SweepOptions) (*SweepResult, error) {
	start := time.Now()
	exp := o.Plan
	prog, stderr := outputs(o.Progress, o.Stderr)
	done := map[results.PointRound]bool{}
	if o.Resume {
		var err error
		if done, err = results.DoneRounds(o.Dir); err != nil {
			return nil, err
		}
	}
	if err := savePlan(o.Dir, exp.Plan); err != nil {
		return nil, err
	}
	env := o.Env
	env.Planned = exp.IDs()
	env.LeftOut = exp.Notes
	w, err := results.NewWriter(o.Dir, env)
	if err != nil {
		return nil, err
	}
	defer w.Close()

	rounds := exp.Rounds()
	res := &SweepResult{Planned: exp.NumPoints(), Rounds: rounds}
	s, before := newSweeper(o, w, prog, stderr, res, done)
	prog.Start(exp.NumMeasurements(), before)
	defer func() {
		s.count()
		res.Elapsed = time.Since(start)
	}()
	for _, n := range exp.Notes {
		prog.Note("skipped: " + n)
	}
sweep:
	for round := 1; round <= rounds; round++ {
		announced := false
		for _, g := range exp.Groups {
			if round > g.Rounds {
				continue
			}
			var pending []plan.PlannedPoint
			for _, p := range g.Points {
				if !done[results.PointRound{Point: p.ID, Round: round}] {
					p.Round, p.Rounds = round, g.Rounds
					pending = append(pending, p)
				}
			}
			if len(pending) == 0 {
				continue
			}
			if ctx.Err() != nil {
				res.Interrupted = true
				break sweep
			}
			if rounds > 1 && !announced {
				prog.Round(round, rounds)
				announced = true
			}
			if err := s.group(ctx, g, round, pending); err != nil {
				prog.Stop(true)
				return res, err
			}
			if res.Interrupted {
				break sweep
			}
		}
	}
	if ctx.Err() != nil {
		res.Interrupted = true
	}
	prog.Stop(res.Interrupted)
	if res.Interrupted {
		return res, w.Close()
	}
	return res, w.Finish()
}

// savePlan writes the plan into dir unless a plan is there already (a
// resumed run keeps its first plan as the record of what was asked).
func savePlan(dir string, p *plan.Plan) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, PlanFileName)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	head := "# The plan of this run, as `distbench sweep` expanded it; `distbench sweep --resume DIR` reads it back.\n"
	return os.WriteFile(path, append([]byte(head), b...), 0o644)
}

// newSweeper makes the sweeper of o's plan into w, with a tally of every
// planned point; before counts the rounds done marks finished already.
func newSweeper(o SweepOptions, w *results.Writer, prog Progress, stderr io.Writer, res *SweepResult, done map[results.PointRound]bool) (s *sweeper, before int) {
	s = &sweeper{o: o, w: w, prog: prog, res: res, stderr: stderr, points: map[string]*pointTally{}}
	for _, g := range o.Plan.Groups {
		for _, p := range g.Points {
			t := &pointTally{rounds: max(g.Rounds, 1)}
			for r := 1; r <= t.rounds; r++ {
				if done[results.PointRound{Point: p.ID, Round: r}] {
					t.before++
				}
			}
			before += t.before
			s.points[p.ID] = t
			s.order = append(s.order, p.ID)
		}
	}
	return s, before
}

// sweeper runs one group and round at a time.
type sweeper struct {
	o      SweepOptions
	w      *results.Writer
	prog   Progress
	res    *SweepResult
	stderr io.Writer
	// round of rounds is the launch in progress's, stamped on its records.
	round, rounds int
	// points tallies every planned point's rounds, in plan order.
	points map[string]*pointTally
	order  []string
	// label names the build in an A/B run's progress lines; "" in a sweep.
	label string
}

// outcome is what one record says of its point, from best to worst.
type outcome int

const (
	outcomeMeasured outcome = iota
	outcomeWrong
	outcomeStopped
	outcomeFailed
	outcomeSkipped
)

func outcomeOf(r *results.Record) outcome {
	switch {
	case strings.HasPrefix(r.Error, "skipped: "):
		return outcomeSkipped
	case r.Error != "":
		return outcomeFailed
	case r.Incomplete:
		return outcomeStopped
	case r.Wrong > 0:
		return outcomeWrong
	}
	return outcomeMeasured
}

// pointTally is what became of one point's rounds.
type pointTally struct {
	rounds int     // planned
	before int     // finished by an earlier session
	ok     int     // finished now, wrong elements or not
	seen   bool    // recorded now
	worst  outcome // of the records written now
}

// count sorts the points into SweepResult's counts.
func (s *sweeper) count() {
	res := s.res
	res.Resumed, res.Measured, res.Failed, res.Stopped, res.Skipped, res.Wrong = 0, 0, 0, 0, 0, 0
	for _, id := range s.order {
		t := s.points[id]
		switch {
		case !t.seen && t.before >= t.rounds:
			res.Resumed++
		case !t.seen:
			// Never reached: Missing in the report, measured on --resume.
		case t.worst == outcomeSkipped:
			res.Skipped++
		case t.worst == outcomeFailed:
			res.Failed++
		case t.worst == outcomeStopped || t.before+t.ok < t.rounds:
			res.Stopped++
		case t.worst == outcomeWrong:
			res.Wrong++
		default:
			res.Measured++
		}
	}
}

// put writes r, stamped with the round in progress.
func (s *sweeper) put(r *results.Record) error {
	r.Round, r.Rounds = s.round, s.rounds
	return s.w.Write(r)
}

// write records r and counts it. The workers build their own records, so
// what only the plan knows of a point (the workload it replays) is copied
// from p's.
func (s *sweeper) write(p *plan.PlannedPoint, r *results.Record) error {
	if p != nil && r.Workload == "" {
		r.Workload = p.Record.Workload
	}
	if err := s.put(r); err != nil {
		return err
	}
	if p == nil {
		return nil
	}
	if t := s.points[p.ID]; t != nil {
		o := outcomeOf(r)
		t.seen = true
		t.worst = max(t.worst, o)
		if o <= outcomeWrong {
			t.ok++
		}
	}
	s.prog.Finished(s.labelled(p), r)
	return nil
}

// labelled is p as the progress display names it: with the build's label
// in front in an A/B run.
func (s *sweeper) labelled(p *plan.PlannedPoint) *plan.PlannedPoint {
	if s.label == "" || p == nil {
		return p
	}
	q := *p
	q.Desc = s.label + ": " + q.Desc
	return &q
}

// group runs one launch, round round of g, over its pending points. Only a
// failure to write results is returned; the launch's own failure is
// recorded.
func (s *sweeper) group(ctx context.Context, g *plan.Group, round int, pending []plan.PlannedPoint) error {
	s.round, s.rounds = round, max(g.Rounds, 1)
	if g.Skip != "" {
		for i := range pending {
			r := pending[i].Record
			r.Error = "skipped: " + g.Skip
			if err := s.write(&pending[i], &r); err != nil {
				return err
			}
		}
		return nil
	}
	byID := map[string]int{}
	for i, p := range pending {
		byID[p.ID] = i
	}
	recorded := make([]bool, len(pending))
	next := 0 // the first point without a record: the one being measured
	var writeErr error
	failedOne := false // a point's own record says how the launch broke
	emit := func(r *results.Record) error {
		if ctx.Err() != nil && r.Error != "" {
			// Ctrl-C reaches the workers too, and the point they were
			// measuring fails with "context canceled": it was cut short,
			// not broken.
			r.Error, r.Incomplete = "", true
		}
		if r.Error != "" {
			failedOne = true
		}
		i, ok := byID[r.Point]
		var p *plan.PlannedPoint
		if ok {
			p = &pending[i]
			recorded[i] = true
		} else {
			s.prog.Note(fmt.Sprintf("%s: a record for unplanned point %q", g.Name(), r.Point))
		}
		if err := s.write(p, r); err != nil {
			writeErr = err
			return err
		}
		for next < len(pending) && recorded[next] {
			next++
		}
		if next < len(pending) {
			s.prog.Measuring(s.labelled(&pending[next]))
		} else {
			s.prog.Measuring(nil)
		}
		return nil
	}
	s.prog.Measuring(s.labelled(&pending[0]))

	var err error
	switch {
	case g.Spec != nil && g.Spec.Train != nil:
		err = s.train(ctx, g.Spec, &pending[0], emit)
	case g.Spec != nil:
		spec := *g.RoundSpec(round)
		spec.Points = nil
		for _, p := range pending {
			for _, q := range g.Spec.Points {
				if g.Spec.PointID(q) == p.ID {
					spec.Points = append(spec.Points, q)
				}
			}
		}
		err = s.launch(ctx, launch.Options{Spec: &spec, Exe: s.o.Exe, Args: s.o.Args, Emit: emit, Stderr: s.stderr, Grace: s.o.Grace})
	case g.Peer != nil:
		job := g.Peer.Job
		job.Sizes = nil
		for _, p := range pending {
			job.Sizes = append(job.Sizes, p.Record.Bytes)
		}
		err = peers.Run(ctx, g.Peer.Peer, job, emit, s.stderr)
	default:
		err = errors.New("empty group")
	}
	if writeErr != nil {
		return writeErr
	}
	if err == nil {
		// A launch that ends well but left points without records has
		// lost them: say so rather than let them pass as missing.
		err = errors.New("the launch ended without a record of this point")
	}
	interrupted := ctx.Err() != nil
	first := !failedOne || interrupted
	for i := range pending {
		if recorded[i] {
			continue
		}
		r := pending[i].Record
		if g.Spec != nil && g.Spec.Train == nil {
			r.Iters = g.RoundSpec(round).Iters
		}
		switch {
		case interrupted && first:
			r.Incomplete = true // in flight when the sweep was stopped
		case interrupted:
			continue // never started: Missing in the report, measured on --resume
		case first:
			r.Error, r.Incomplete = "failed: "+err.Error(), true
		default:
			r.Error, r.Incomplete = "not measured: the launch failed before reaching it: "+err.Error(), true
		}
		first = false
		if werr := s.write(&pending[i], &r); werr != nil {
			return werr
		}
	}
	if interrupted {
		s.res.Interrupted = true
	} else if !allTrue(recorded) {
		s.prog.Note(fmt.Sprintf("%s: %v", g.Name(), err))
	}
	return nil
}

func (s *sweeper) launch(ctx context.Context, o launch.Options) error {
	if s.o.Launch != nil {
		return s.o.Launch(ctx, o)
	}
	return launch.Launch(ctx, o)
}

func allTrue(b []bool) bool { return !slices.Contains(b, false) }

// train runs a training launch. Its records (train_step, train_epoch) are
// written with Point empty, except the last one of a run that ended well,
// which carries the point's id: so a training run counts as done, for
// --resume, only once it has finished. Each record is held back until the
// next arrives, to know which is last.
func (s *sweeper) train(ctx context.Context, spec *job.Spec, p *plan.PlannedPoint, emit func(*results.Record) error) error {
	var held *results.Record
	err := s.launch(ctx, launch.Options{
		Spec: spec, Exe: s.o.Exe, Args: s.o.Args, Stderr: s.stderr, Grace: s.o.Grace,
		Emit: func(r *results.Record) error {
			if held != nil {
				if err := s.put(held); err != nil {
					return err
				}
			}
			r.Point = ""
			held = r
			return nil
		},
	})
	if held == nil {
		if err == nil {
			err = errors.New("the training run emitted no records")
		}
		return err
	}
	if err != nil {
		if werr := s.put(held); werr != nil {
			return werr
		}
		return err
	}
	held.Point = p.ID
	return emit(held)
}
