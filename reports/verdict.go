package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/distbench/distbench/results"
)

// writeVerdict opens the report with its answer, drawn from the same cells
// as the winner maps: for each collective and world size, which strategy is
// fastest over which sizes, where the order changes, where the order is
// inside the noise (a tie), and how far the parameter server is from the
// fastest other strategy (the best allreduce, for an allreduce); then what
// trained how well; then the caveats that bound all of it.
func (rp *report) writeVerdict(secs []*section) {
	var body strings.Builder
	for _, s := range secs {
		lines := verdictLines(s)
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(&body, "**%s**\n\n", s.title)
		for _, l := range lines {
			body.WriteString("- " + l + "\n")
		}
		body.WriteString("\n")
	}
	if strings.Contains(body.String(), "95% CI") { // records without samples have no interval to explain
		body.WriteString("A margin is the runner-up's median time over the winner's, − 1. Its 95% confidence interval is bootstrapped " +
			"from the two points' per-iteration samples (a point in rounds pools its rounds' samples); over a range of sizes, " +
			"\"CIs within\" gives the lowest and the highest bound of its sizes' intervals.\n\n")
	}
	for _, g := range trainGroups(rp.run.Records) {
		if l := trainingVerdict(g, secs); l != "" {
			fmt.Fprintf(&body, "**Training %s**: %s.\n\n", g.title, l)
		}
	}
	caveats := rp.caveats()
	if body.Len() == 0 && len(caveats) == 0 {
		return
	}
	rp.m.h(2, "Verdict")
	if body.Len() == 0 {
		rp.m.p("No collective was measured with two strategies or more: nothing to rank.")
	}
	rp.m.WriteString(body.String())
	if len(caveats) > 0 {
		rp.m.p("Caveats:")
		for _, c := range caveats {
			rp.m.WriteString("- " + c + "\n")
		}
		rp.m.WriteString("\n")
	}
}

// verdictLines says, per world size of s, who wins over which sizes. A
// range of sizes with one outcome is one phrase; a change of significant
// winner is a crossover, named with the sizes it lies between.
func verdictLines(s *section) []string {
	ws := winners(s)
	var lines []string
	strategies := 0
	for _, name := range s.series {
		if !s.peer[name] {
			strategies++
		}
	}
	if strategies < 2 {
		return nil
	}
	for _, np := range s.nps {
		var runs []verdictRun
		for _, b := range s.sizes {
			w, ok := ws[[2]int64{int64(np), b}]
			if !ok || w.runner == "" {
				continue
			}
			label, tie := w.best, ""
			if w.tie() {
				label, tie = "", tieNames(w)
			}
			if n := len(runs); n > 0 && runs[n-1].label == label && runs[n-1].tie == tie {
				runs[n-1].add(w)
				continue
			}
			runs = append(runs, newVerdictRun(label, tie, w))
		}
		if len(runs) == 0 {
			continue
		}
		var phrases []string
		lastWin := -1
		for i, r := range runs {
			crossover := ""
			if r.label != "" && lastWin >= 0 && runs[lastWin].label != r.label {
				crossover = fmt.Sprintf("crossover from %s between %s and %s", runs[lastWin].label,
					results.FormatSize(runs[lastWin].to), results.FormatSize(r.from))
			}
			phrases = append(phrases, r.phrase(crossover))
			if r.label != "" {
				lastWin = i
			}
		}
		line := fmt.Sprintf("%d ranks: %s", np, strings.Join(phrases, "; "))
		if ps := psFactor(s, np); ps != "" {
			line += "; " + ps
		}
		lines = append(lines, line+".")
	}
	return lines
}

// verdictRun is a range of neighbouring sizes with one outcome: a winner, or
// a tie between the same two strategies.
type verdictRun struct {
	label    string // the winner, "" for a tie
	tie      string // the tied strategies
	from, to int64
	cells    int
	lo, hi   float64 // the smallest and largest margin of the wins
	// ciLo and ciHi bound the cells' 95% confidence intervals of the
	// margin: the lowest low and the highest high; NaN when a cell has none.
	ciLo, ciHi float64
}

func newVerdictRun(label, tie string, w winner) verdictRun {
	return verdictRun{label: label, tie: tie, from: w.bytes, to: w.bytes, cells: 1,
		lo: w.margin, hi: w.margin, ciLo: w.marginLo, ciHi: w.marginHi}
}

// add extends r by the next size's cell w. One cell without an interval
// leaves the run without one: a bound over some cells is not a bound.
func (r *verdictRun) add(w winner) {
	r.to = w.bytes
	r.cells++
	r.lo, r.hi = math.Min(r.lo, w.margin), math.Max(r.hi, w.margin)
	r.ciLo, r.ciHi = math.Min(r.ciLo, w.marginLo), math.Max(r.ciHi, w.marginHi) // NaN stays NaN
}

// phrase says r: a win with its margin, the margin's 95% interval (of the
// one cell, or the bounds of the cells' intervals) and the crossover that
// began it, if any; a tie with no margin, since a margin inside the noise
// is not a result.
func (r verdictRun) phrase(crossover string) string {
	at := sizeRange(r.from, r.to)
	if r.label == "" {
		return fmt.Sprintf("%s at %s: a tie, inside the noise", r.tie, at)
	}
	var notes []string
	switch {
	case math.IsNaN(r.ciLo) || math.IsNaN(r.ciHi):
	case r.cells == 1:
		notes = append(notes, "95% CI "+pctSpan(r.ciLo, r.ciHi))
	default:
		notes = append(notes, "95% CIs within "+pctSpan(r.ciLo, r.ciHi))
	}
	if crossover != "" {
		notes = append(notes, crossover)
	}
	phrase := fmt.Sprintf("**%s** fastest at %s, by %s", r.label, at, pctRange(r.lo, r.hi))
	if len(notes) > 0 {
		phrase += " (" + strings.Join(notes, "; ") + ")"
	}
	return phrase
}

// isPS: a series of the parameter server, over either transport ("ps",
// "ps/grpc").
func isPS(base string) bool { return base == "ps" || strings.HasPrefix(base, "ps/") }

// psFactor is how many times the fastest other strategy's time (the best
// allreduce, for an allreduce) the parameter server takes at np, as a range
// over the sizes both measured, with the bounds of its 95% intervals, or "".
// It is the default transport's (the mesh); ps/grpc is no allreduce to
// compare it with.
func psFactor(s *section, np int) string {
	f := psFactors(s, []int{np})
	if f.n == 0 {
		return ""
	}
	lo, hi, ciLo, ciHi, at := f.lo, f.hi, f.ciLo, f.ciHi, f.at
	var notes []string
	text := fmt.Sprintf("%.1f×", lo)
	if fmt.Sprintf("%.1f", lo) != fmt.Sprintf("%.1f", hi) {
		text = fmt.Sprintf("%.1f–%.1f×", lo, hi)
		notes = append(notes, sizeRange(at[0], at[len(at)-1]))
	}
	if !math.IsNaN(ciLo) && !math.IsNaN(ciHi) {
		ci := "95% CI "
		if len(at) > 1 {
			ci = "95% CIs within "
		}
		notes = append(notes, fmt.Sprintf("%s%.1f–%.1f×", ci, ciLo, ciHi))
	}
	line := "the parameter server takes " + text + " the fastest other strategy's time"
	if len(notes) > 0 {
		line += " (" + strings.Join(notes, "; ") + ")"
	}
	return line
}

// trainingVerdict is how soon each training series of g reached the
// target accuracy, then each one's final test accuracy and wall time, in
// the order they reached the target; or "".
func trainingVerdict(g *trainGroup, secs []*section) string {
	t := timeToTarget(g)
	var finals []string
	for _, r := range t.byTime() {
		part := fmt.Sprintf("%s %s%%", r.name, num(r.final))
		if r.wall > 0 {
			part += fmt.Sprintf(" after %s s", num(r.wall))
		}
		finals = append(finals, part)
	}
	if len(finals) == 0 {
		return ""
	}
	final := "final test accuracy " + strings.Join(finals, ", ")
	if t.pct == 0 {
		return final
	}
	race := raceOf(g).sentence(secs)
	if race == "" {
		race = t.verdict()
	}
	return fmt.Sprintf("%s; %s (%s)", race, final, t.evalNote())
}

// caveats are what bounds the verdict: world sizes with more ranks than
// cores, shaped links, and, by reference to the status section that lists
// them, failed, missing or left-out points.
func (rp *report) caveats() []string {
	var out []string
	if env := rp.run.Env; env != nil {
		if over := oversubscribed(rp.run.Records, env.Cores); len(over) > 0 {
			sizes := "world sizes " + strings.Join(over, ", ") + " run"
			if len(over) == 1 {
				sizes = "world size " + over[0] + " runs"
			}
			out = append(out, fmt.Sprintf("%s more ranks than the %d cores here: their times include the OS scheduler's, latency most of all, "+
				"and say little of a cluster with a core per rank", sizes, env.Cores))
		}
	}
	if rp.incomplete {
		out = append(out, "the run is incomplete: what it lacks (see [Status](#status)) is not ranked here")
	}
	shaped := map[string]bool{}
	for i := range rp.run.Records {
		if l := rp.run.Records[i].Link; l != "" && !shaped[l] {
			shaped[l] = true
			out = append(out, fmt.Sprintf("points with link %q ran on links shaped to that rate and latency (a model of a network), not on a real one", l))
		}
	}
	return out
}

func sizeRange(from, to int64) string {
	if from == to {
		return results.FormatSize(from)
	}
	return results.FormatSize(from) + "–" + results.FormatSize(to)
}

// pctSpan is an interval in percent, "18–35%", or "−2% to 35%" when it
// crosses zero, where a dash would read as a minus.
func pctSpan(lo, hi float64) string {
	a, b := wholePct(lo), wholePct(hi)
	if a < 0 {
		return fmt.Sprintf("%s%% to %s%%", signed(a), signed(b))
	}
	return fmt.Sprintf("%d–%s%%", a, signed(b))
}

// wholePct is x in whole percent, rounded half away from zero, with no −0.
func wholePct(x float64) int { return int(math.Round(100 * x)) }

func signed(n int) string {
	if n < 0 {
		return fmt.Sprintf("−%d", -n)
	}
	return fmt.Sprint(n)
}

func pctRange(lo, hi float64) string {
	a, b := fmt.Sprintf("%.0f%%", 100*lo), fmt.Sprintf("%.0f%%", 100*hi)
	if a == b {
		return a
	}
	return fmt.Sprintf("%.0f–%s", 100*lo, b)
}
