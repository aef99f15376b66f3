package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/distbench/distbench/results"
)

// Time to a target accuracy: "PS or allreduce" in convergence terms is not
// which ends more accurate after a fixed number of steps but which gets to a
// useful accuracy sooner. The target is chosen from the data so that every
// series that learned can be compared: 90% of the lowest final test accuracy
// among them, rounded down to a whole percent. Test accuracy is only known
// where it was evaluated (at the end of each epoch, or of a run cut short by
// a step limit), so a time to target is that of the first evaluation at or
// above it; nothing between evaluations is interpolated.

// targetShare is the target's share of the lowest final accuracy.
const targetShare = 0.9

// trainTarget is a group's target and how each of its series met it.
type trainTarget struct {
	pct  float64 // the target test accuracy in percent; 0 when there is none
	rows []targetRow
}

// targetRow is one series' way to the target.
type targetRow struct {
	name  string
	evals int     // test accuracy evaluations
	final float64 // final test accuracy, percent
	wall  float64 // the run's wall time, seconds (0: not recorded)
	// learned is false for a series whose final accuracy is under half the
	// best series': it sets no target (a diverged run would make any
	// target trivial) and is reported as not reaching it.
	learned bool
	// hit is the first evaluation at or above the target (nil: not
	// reached), the hitEval-th (1-based) of evals, after step training
	// steps (0: not known).
	hit     *results.Record
	hitEval int
	step    int
}

// timeToTarget sets g's target and finds, for each series with a test
// accuracy, the first evaluation that reached it.
func timeToTarget(g *trainGroup) trainTarget {
	var t trainTarget
	best := 0.0
	for _, name := range g.series {
		evals := evaluations(g, name)
		if len(evals) == 0 {
			continue
		}
		last := evals[len(evals)-1]
		row := targetRow{name: name, evals: len(evals), final: accPct(g, last.TestAcc), wall: last.WallSeconds}
		if row.wall <= 0 {
			if st := g.steps[name]; len(st) > 0 {
				row.wall = st[len(st)-1].WallSeconds
			}
		}
		best = math.Max(best, row.final)
		t.rows = append(t.rows, row)
	}
	lowest := math.Inf(1)
	for i := range t.rows {
		r := &t.rows[i]
		r.learned = r.final >= best/2
		if r.learned {
			lowest = math.Min(lowest, r.final)
		}
	}
	if math.IsInf(lowest, 1) {
		return t
	}
	// The small epsilon keeps 90% of 90 at 81, not 80.99999….
	t.pct = math.Floor(targetShare*lowest + 1e-9)
	if t.pct < 1 {
		t.pct = 0
		return t
	}
	for i := range t.rows {
		r := &t.rows[i]
		for k, e := range evaluations(g, r.name) {
			if accPct(g, e.TestAcc) >= t.pct {
				r.hit, r.hitEval, r.step = e, k+1, stepsAt(g, r.name, e)
				break
			}
		}
	}
	return t
}

// evaluations are the records of series name that carry a test accuracy,
// in file order.
func evaluations(g *trainGroup, name string) []*results.Record {
	var out []*results.Record
	for _, r := range g.epochs[name] {
		if r.TestAcc > 0 {
			out = append(out, r)
		}
	}
	return out
}

// stepsAt is how many training steps series name had taken when it
// recorded e: e's own step count where it has one (the global step, as
// workloads/train records it), else the step records of e's epoch and the
// epochs before; 0 when neither says.
func stepsAt(g *trainGroup, name string, e *results.Record) int {
	if e.Step > 0 {
		return e.Step
	}
	if e.Epoch <= 0 {
		return 0
	}
	n := 0
	for _, s := range g.steps[name] {
		if s.Epoch <= e.Epoch {
			n++
		}
	}
	return n
}

// byTime orders the rows as a reader ranks them: those that reached the
// target, soonest first, then those that did not, in series order.
func (t trainTarget) byTime() []targetRow {
	rows := slices.Clone(t.rows)
	slices.SortStableFunc(rows, func(a, b targetRow) int {
		switch {
		case (a.hit == nil) != (b.hit == nil):
			if a.hit == nil {
				return 1
			}
			return -1
		case a.hit == nil:
			return 0
		}
		if a.hit.WallSeconds != b.hit.WallSeconds {
			if a.hit.WallSeconds < b.hit.WallSeconds {
				return -1
			}
			return 1
		}
		return a.step - b.step
	})
	return rows
}

// reachedText is how a row met the target: "by 1.53 s at step 30",
// "at step 30" without a wall time, "not reached".
func (r targetRow) reachedText() string {
	if r.hit == nil {
		return "not reached"
	}
	var parts []string
	if r.hit.WallSeconds > 0 {
		parts = append(parts, "by "+num(r.hit.WallSeconds)+" s")
	}
	if r.step > 0 {
		parts = append(parts, fmt.Sprintf("at step %d", r.step))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("at evaluation %d", r.hitEval)
	}
	return strings.Join(parts, " ")
}

// verdict is the training line's account of the target: "ring ddp reached
// 85% test accuracy by 1.53 s at step 30; ps ps-sync by 2.30 s at step 30;
// ps ps-async not reached", or "" without a target.
func (t trainTarget) verdict() string {
	if t.pct == 0 {
		return ""
	}
	var parts []string
	for i, r := range t.byTime() {
		text := r.name + " " + r.reachedText()
		if i == 0 { // a series that learned always reaches the target, so it has a hit
			text = fmt.Sprintf("%s reached %s%% test accuracy %s", r.name, fmt.Sprintf("%.0f", t.pct), r.reachedText())
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "; ")
}

// evalNote is the verdict's short form of how(): how often accuracy was
// evaluated, and the target's rule.
func (t trainTarget) evalNote() string {
	lo, hi := math.MaxInt, 0
	for _, r := range t.rows {
		lo, hi = min(lo, r.evals), max(hi, r.evals)
	}
	evals := fmt.Sprintf("evaluated %d times a series", lo)
	switch {
	case hi == 1:
		evals = "evaluated once a series, at the end of its run"
	case lo != hi:
		evals = fmt.Sprintf("evaluated %d to %d times a series", lo, hi)
	}
	return fmt.Sprintf("the target is %.0f%% of the lowest final accuracy; accuracy %s", 100*targetShare, evals)
}

// how says how the target was chosen and where accuracy was measured, the
// two things a reader needs to weigh a time to target.
func (t trainTarget) how() string {
	if t.pct == 0 {
		return ""
	}
	lowest, by := math.Inf(1), ""
	var unlearned []string
	lo, hi := math.MaxInt, 0
	for _, r := range t.rows {
		lo, hi = min(lo, r.evals), max(hi, r.evals)
		if !r.learned {
			unlearned = append(unlearned, fmt.Sprintf("%s (%s%%)", r.name, num(r.final)))
			continue
		}
		if r.final < lowest {
			lowest, by = r.final, r.name
		}
	}
	s := fmt.Sprintf("The target, %s%%, is %.0f%% of the lowest final test accuracy (%s, %s%%), rounded down to a whole percent",
		fmt.Sprintf("%.0f", t.pct), 100*targetShare, by, num(lowest))
	if len(unlearned) > 0 {
		s += "; " + strings.Join(unlearned, ", ") + " ended under half the best final accuracy and set no target"
	}
	s += ". "
	evals := fmt.Sprintf("%d times", lo)
	if lo != hi {
		evals = fmt.Sprintf("%d to %d times", lo, hi)
	}
	if hi == 1 {
		return s + "Test accuracy was evaluated once a series, at the end of its run, so a time to target is the run's whole wall time and " +
			"says nothing finer; evaluations during the run (more epochs) would."
	}
	return s + fmt.Sprintf("Test accuracy was evaluated %s a series, at the end of each epoch, so a time to target is that of the first "+
		"evaluation at or above it: the target was crossed somewhere since the evaluation before (or the start). Nothing is interpolated.", evals)
}

// writeTarget writes the convergence section's time-to-target table.
func (rp *report) writeTarget(g *trainGroup) error {
	t := timeToTarget(g)
	if t.pct == 0 {
		return nil
	}
	rp.m.h(4, fmt.Sprintf("Time to %.0f%% test accuracy", t.pct))
	rp.m.text(t.how())
	target := fmt.Sprintf("%.0f", t.pct) + "%"
	tb := &table{header: []string{"series", "final test accuracy (%)", "time to " + target + " (s)", "steps to " + target, "evaluation", "wall time (s)"}}
	for _, r := range t.byTime() {
		row := []string{r.name, num(r.final), "not reached", "", "", ""}
		if r.hit != nil {
			row[2], row[4] = "", fmt.Sprintf("%d of %d", r.hitEval, r.evals)
			if r.hit.WallSeconds > 0 {
				row[2] = num(r.hit.WallSeconds)
			}
			if r.step > 0 {
				row[3] = fmt.Sprint(r.step)
			}
		}
		if r.wall > 0 {
			row[5] = num(r.wall)
		}
		tb.add(row...)
	}
	return rp.m.table(tb)
}
