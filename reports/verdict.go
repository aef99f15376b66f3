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
	for _, g := range trainGroups(rp.run.Records) {
		if l := trainingVerdict(g); l != "" {
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
		type run struct {
			label    string // the winner, "" for a tie
			tie      string // the tied strategies
			from, to int64
			lo, hi   float64 // margins of the wins
		}
		var runs []run
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
				r := &runs[n-1]
				r.to = b
				r.lo, r.hi = math.Min(r.lo, w.margin), math.Max(r.hi, w.margin)
				continue
			}
			runs = append(runs, run{label: label, tie: tie, from: b, to: b, lo: w.margin, hi: w.margin})
		}
		if len(runs) == 0 {
			continue
		}
		var phrases []string
		lastWin := -1
		for i, r := range runs {
			at := sizeRange(r.from, r.to)
			if r.label == "" {
				phrases = append(phrases, fmt.Sprintf("%s at %s: a tie, inside the noise", r.tie, at))
				continue
			}
			phrase := fmt.Sprintf("**%s** fastest at %s, by %s", r.label, at, pctRange(r.lo, r.hi))
			if lastWin >= 0 && runs[lastWin].label != r.label {
				phrase += fmt.Sprintf(" (crossover from %s between %s and %s)", runs[lastWin].label,
					results.FormatSize(runs[lastWin].to), results.FormatSize(r.from))
			}
			phrases = append(phrases, phrase)
			lastWin = i
		}
		line := fmt.Sprintf("%d ranks: %s", np, strings.Join(phrases, "; "))
		if ps := psFactor(s, np); ps != "" {
			line += "; " + ps
		}
		lines = append(lines, line+".")
	}
	return lines
}

// psFactor is how many times the fastest other strategy's time (the best
// allreduce, for an allreduce) the parameter server takes at np, as a range
// over the sizes both measured, or "".
func psFactor(s *section, np int) string {
	lo, hi := math.Inf(1), 0.0
	var at []int64
	for _, name := range s.series {
		if s.base[name] != "ps" || s.peer[name] {
			continue
		}
		for _, b := range s.sizes {
			ps := s.at(name, np, b)
			if ps == nil || ps.TimeUs <= 0 {
				continue
			}
			best := math.Inf(1)
			for _, other := range s.series {
				if r := s.at(other, np, b); r != nil && !s.peer[other] && s.base[other] != "ps" && r.TimeUs > 0 {
					best = math.Min(best, r.TimeUs)
				}
			}
			if math.IsInf(best, 1) {
				continue
			}
			f := ps.TimeUs / best
			lo, hi = math.Min(lo, f), math.Max(hi, f)
			at = append(at, b)
		}
	}
	if len(at) == 0 {
		return ""
	}
	if fmt.Sprintf("%.1f", lo) == fmt.Sprintf("%.1f", hi) {
		return fmt.Sprintf("the parameter server takes %.1f× the fastest other strategy's time", lo)
	}
	return fmt.Sprintf("the parameter server takes %.1f–%.1f× the fastest other strategy's time (%s)", lo, hi, sizeRange(at[0], at[len(at)-1]))
}

// trainingVerdict is each training series' final test accuracy and wall
// time, in the group's series order, or "".
func trainingVerdict(g *trainGroup) string {
	var parts []string
	for _, name := range g.series {
		ep := g.epochs[name]
		if len(ep) == 0 {
			continue
		}
		last := ep[len(ep)-1]
		part := fmt.Sprintf("%s %s%% test accuracy", name, num(accPct(g, last.TestAcc)))
		if last.WallSeconds > 0 {
			part += fmt.Sprintf(" after %s s", num(last.WallSeconds))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
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

func pctRange(lo, hi float64) string {
	a, b := fmt.Sprintf("%.0f%%", 100*lo), fmt.Sprintf("%.0f%%", 100*hi)
	if a == b {
		return a
	}
	return fmt.Sprintf("%.0f–%s", 100*lo, b)
}
