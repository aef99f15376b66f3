package reports

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/distbench/distbench/stats"
)

// Time to accuracy, counted where strategies differ. A training run's wall
// time includes the test evaluations at the end of each epoch, the same
// work for every strategy (in the default sweep about 80% of it), so a
// ranking by wall time ranks the machine's load during those evaluations.
// What a strategy changes is the training step: its compute plus the
// communication it leaves exposed. So a series' time to the target is its
// steps to the target times its median step time (compute + exposed
// communication, as each step record carries them); the median, because a
// burst of load on a shared machine slows a few steps, not the strategy.
// Two series differ only where the 95% bootstrap interval of that ratio
// (from the per-step times) excludes 1, and, for two allreduce strategies,
// only where the collectives' own measurements at that world size find the
// faster one faster somewhere: otherwise the difference is called a tie
// and the sentence says why.

// raceRow is one series' time to the target in training steps.
type raceRow struct {
	name, strategy string
	np             int
	runs           int       // how many runs the series' records hold
	steps          int       // training steps to the target
	stepMs         []float64 // compute + exposed communication, each step up to the target
	computeMs      []float64 // compute alone, the same steps
	seconds        float64   // steps × median step time
}

// trainRace is a group's series that reached the target, soonest first by
// training-step time; pct is the target (0: none).
type trainRace struct {
	pct  float64
	rows []raceRow
}

func raceOf(g *trainGroup) trainRace {
	t := timeToTarget(g)
	race := trainRace{pct: t.pct}
	if t.pct == 0 {
		return race
	}
	for _, r := range t.rows {
		if r.hit == nil || r.step <= 0 {
			continue
		}
		row := raceRow{name: r.name, steps: r.step}
		for _, e := range g.epochs[r.name] {
			if e.Epoch == 1 {
				row.runs++ // each run evaluates its first epoch once
			}
		}
		steps := g.steps[r.name]
		if len(steps) > 0 {
			row.strategy, row.np = steps[0].Strategy, steps[0].NP
		}
		// The steps up to the target: the first r.step of the run; with
		// several runs pooled, every run's steps up to that step count.
		if row.runs <= 1 {
			steps = steps[:min(r.step, len(steps))]
		}
		for _, st := range steps {
			if (row.runs <= 1 || st.Step <= r.step) && st.ComputeMs+st.ExposedMs > 0 {
				row.stepMs = append(row.stepMs, st.ComputeMs+st.ExposedMs)
				row.computeMs = append(row.computeMs, st.ComputeMs)
			}
		}
		if len(row.stepMs) == 0 {
			continue
		}
		row.runs = max(row.runs, 1)
		row.seconds = float64(row.steps) * stats.Median(row.stepMs) / 1e3
		race.rows = append(race.rows, row)
	}
	slices.SortStableFunc(race.rows, func(a, b raceRow) int {
		switch {
		case a.seconds < b.seconds:
			return -1
		case a.seconds > b.seconds:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return race
}

// ratio is how many times a's training-step time to the target b takes,
// with the 95% interval of that ratio.
func (race trainRace) ratio(a, b raceRow) (f, lo, hi float64) {
	h := fnv.New64a()
	h.Write([]byte(a.name + "/" + b.name))
	l, u := stats.MedianRatioCI(a.stepMs, b.stepMs, h.Sum64())
	k := float64(b.steps) / float64(a.steps)
	return b.seconds / a.seconds, k * (1 + l), k * (1 + u)
}

// contradicts says why a training win of fast over slow is not the
// strategies' own, or "": where both are strategies the collectives
// measured at the same world size, and none of those measurements finds
// fast significantly faster than slow at any size.
func contradicts(fast, slow raceRow, secs []*section) string {
	if fast.strategy == slow.strategy {
		return ""
	}
	compared := false
	for _, s := range secs {
		if s.key.collective != "allreduce" || s.key.link != "" {
			continue
		}
		for _, b := range s.sizes {
			rf, rs := s.at(fast.strategy, fast.np, b), s.at(slow.strategy, slow.np, b)
			if rf == nil || rs == nil {
				continue
			}
			compared = true
			lo, _ := ratioCI(rf, rs, fmt.Sprintf("%s/np=%d/bytes=%d/%s/%s", s.slug, fast.np, b, fast.strategy, slow.strategy))
			if lo > 0 {
				return ""
			}
		}
	}
	if !compared {
		return ""
	}
	why := fmt.Sprintf("the allreduce measurements at %d ranks find %s no faster than %s at any size, so the step times' difference is not the strategy's",
		fast.np, fast.strategy, slow.strategy)
	if cf, cs := stats.Median(fast.computeMs), stats.Median(slow.computeMs); cf > 0 && cs/cf >= 1.1 {
		why += fmt.Sprintf(" (their compute, the same work, differed by %.1f× too: the machine's load)", cs/cf)
	}
	return why
}

// sentence is the group's comparison: the soonest series, with those that
// do not differ from it (and why, where the step times alone would say
// otherwise), and how much sooner they were than each of the others.
func (race trainRace) sentence(secs []*section) string {
	if race.pct == 0 || len(race.rows) < 2 {
		return ""
	}
	target := fmt.Sprintf("%.0f%% test accuracy", race.pct)
	best := race.rows[0]
	leaders := []raceRow{best}
	var why []string
	var rest []raceRow
	for _, r := range race.rows[1:] {
		_, lo, _ := race.ratio(best, r)
		switch {
		case math.IsNaN(lo) || lo <= 1:
			leaders = append(leaders, r)
		default:
			if c := contradicts(best, r, secs); c != "" {
				leaders = append(leaders, r)
				why = append(why, c)
				continue
			}
			rest = append(rest, r)
		}
	}
	// How much sooner the leaders were than each other series: the range
	// of the ratios over the leaders, and of their intervals' bounds.
	var slower, unclear []string
	for _, r := range rest {
		fLo, fHi, ciLo, ciHi := math.Inf(1), 0.0, math.Inf(1), 0.0
		for _, l := range leaders {
			f, lo, hi := race.ratio(l, r)
			fLo, fHi = math.Min(fLo, f), math.Max(fHi, f)
			ciLo, ciHi = math.Min(ciLo, lo), math.Max(ciHi, hi)
		}
		ci := "95% CI"
		if len(leaders) > 1 {
			ci = "95% CIs within"
		}
		if ciLo <= 1 { // beyond the noise against one leader, not all
			unclear = append(unclear, fmt.Sprintf("%s took %s their time (%s %.2f–%.2f×), not clearly more", r.name, ratioRange(fLo, fHi), ci, ciLo, ciHi))
			continue
		}
		slower = append(slower, fmt.Sprintf("%s sooner than %s (%s %.2f–%.2f×)", ratioRange(fLo, fHi), r.name, ci, ciLo, ciHi))
	}
	var text string
	if len(leaders) == 1 {
		text = fmt.Sprintf("**%s** reached %s in %s s of training steps", best.name, target, num(best.seconds))
		if len(slower) > 0 {
			text += ","
		}
	} else {
		names, times := make([]string, len(leaders)), make([]string, len(leaders))
		slices.SortFunc(leaders, func(a, b raceRow) int { return strings.Compare(a.name, b.name) })
		for i, l := range leaders {
			names[i], times[i] = l.name, num(l.seconds)+" s"
		}
		text = fmt.Sprintf("no difference between %s in training-step time to %s (%s)", joinAnd(names), target, joinAnd(times))
		if len(why) > 0 {
			text += ": " + strings.Join(why, "; ")
		}
		if len(slower) > 0 {
			text += "; they reached it"
		}
	}
	if len(slower) > 0 {
		text += " " + joinAnd(slower)
	}
	if len(unclear) > 0 {
		text += "; " + strings.Join(unclear, "; ")
	}
	runs := "one run each"
	for _, r := range race.rows {
		if r.runs > 1 {
			runs = "runs pooled"
		}
	}
	return text + "; " + runs + ", test evaluations (the same work for every strategy) not counted"
}

// ratioRange is "1.59×" or "1.59–2.17×".
func ratioRange(lo, hi float64) string {
	a, b := fmt.Sprintf("%.2f", lo), fmt.Sprintf("%.2f", hi)
	if a == b {
		return a + "×"
	}
	return a + "–" + b + "×"
}

// trainHeadline is a training group's headline sentence, or "".
func trainHeadline(g *trainGroup, secs []*section) string {
	s := raceOf(g).sentence(secs)
	if s == "" {
		return ""
	}
	nps := map[int]bool{}
	for _, name := range g.series {
		if st := g.steps[name]; len(st) > 0 {
			nps[st[0].NP] = true
		}
	}
	at := ""
	if len(nps) == 1 {
		for np := range nps {
			at = fmt.Sprintf(", %d ranks", np)
		}
	}
	return fmt.Sprintf("**Training %s**%s: %s.", g.title, at, s)
}
