package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/distbench/distbench/results"
)

// The headline answers the report's question in a few sentences before any
// table: per collective, which strategy to use over which sizes and world
// sizes and by how much, where the choice does not matter (the cells the
// winner map calls ties), and how the parameter server compares; then, per
// training group, which strategy reached the target accuracy sooner in
// training-step time, or that none did by more than the noise. It is drawn
// from the same cells as the verdict and the winner maps, so it can never
// disagree with them; the verdict below gives the detail per world size.

// writeHeadline writes the "Headline" section, or nothing when there is
// nothing to compare.
func (rp *report) writeHeadline(secs []*section) {
	var lines []string
	for _, s := range secs {
		if l := headlineLine(s); l != "" {
			lines = append(lines, l)
		}
	}
	for _, g := range trainGroups(rp.run.Records) {
		if l := trainHeadline(g, secs); l != "" {
			lines = append(lines, l)
		}
	}
	if l := rp.cluster.headline(); l != "" {
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return
	}
	rp.m.h(2, "Headline")
	for _, l := range lines {
		rp.m.WriteString("- " + l + "\n")
	}
	rp.m.WriteString("\n")
	rp.m.p("Where two strategies' 95%% intervals overlap, or a winner was not faster in every round, the headline says \"no difference\": " +
		"either is as good here. The [verdict](#verdict) gives each world size apart.")
}

// outcome is a strategy's wins (or a pair's ties) over a section's cells.
type outcome struct {
	cells          map[int][]int64 // np → sizes
	n              int
	lo, hi         float64 // margins
	ciLo, ciHi     float64
	first          int // order of first appearance, for stable output
	tie, tieSecond string
}

// headlineLine is one collective's sentence, or "" when fewer than two
// strategies were measured.
func headlineLine(s *section) string {
	strategies := 0
	for _, name := range s.series {
		if !s.peer[name] {
			strategies++
		}
	}
	if strategies < 2 {
		return ""
	}
	ws := winners(s)
	wins := map[string]*outcome{}
	ties := map[string]*outcome{}
	order := 0
	get := func(m map[string]*outcome, k string) *outcome {
		o := m[k]
		if o == nil {
			o = &outcome{cells: map[int][]int64{}, lo: math.Inf(1), hi: math.Inf(-1), ciLo: math.Inf(1), ciHi: math.Inf(-1), first: order}
			order++
			m[k] = o
		}
		return o
	}
	for _, np := range s.nps {
		for _, b := range s.sizes {
			w, ok := ws[[2]int64{int64(np), b}]
			if !ok || w.runner == "" {
				continue
			}
			if w.tie() {
				o := get(ties, tieNames(w))
				o.cells[np] = append(o.cells[np], b)
				o.n++
				continue
			}
			o := get(wins, w.best)
			o.cells[np] = append(o.cells[np], b)
			o.n++
			o.lo, o.hi = math.Min(o.lo, w.margin), math.Max(o.hi, w.margin)
			o.ciLo, o.ciHi = math.Min(o.ciLo, w.marginLo), math.Max(o.ciHi, w.marginHi) // NaN stays NaN
		}
	}
	byCells := func(m map[string]*outcome) []string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			if d := m[b].n - m[a].n; d != 0 {
				return d
			}
			return m[a].first - m[b].first
		})
		return keys
	}
	var parts []string
	for i, name := range byCells(wins) {
		o := wins[name]
		text := fmt.Sprintf("**%s** is fastest %s, by %s", name, where(s, o.cells), pctRange(o.lo, o.hi))
		if i > 0 {
			text = fmt.Sprintf("**%s** %s, by %s", name, where(s, o.cells), pctRange(o.lo, o.hi))
		}
		if !math.IsNaN(o.ciLo) && !math.IsNaN(o.ciHi) && !math.IsInf(o.ciLo, 0) {
			text += " (95% CIs within " + pctSpan(o.ciLo, o.ciHi) + ")"
		}
		parts = append(parts, text)
	}
	if t := tiePhrase(s, ties, byCells(ties), len(wins) == 0); t != "" {
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return ""
	}
	line := fmt.Sprintf("**%s**: %s.", s.title, strings.Join(parts, "; "))
	if ps := psHeadline(s); ps != "" {
		line += " " + ps
	}
	return line
}

// tiePhrase says the tied cells: one pair reads "no difference between
// ring and tree at …"; several, "no difference between the two fastest:
// ring ≈ tree at …, ps ≈ tree at …", and where nothing won anywhere
// (none) the phrase says so first, since that is the answer.
func tiePhrase(s *section, ties map[string]*outcome, pairs []string, none bool) string {
	switch {
	case len(pairs) == 1:
		a, b, _ := strings.Cut(pairs[0], " ≈ ")
		return fmt.Sprintf("no difference between %s and %s %s", a, b, where(s, ties[pairs[0]].cells))
	case len(pairs) > 1:
		var out []string
		for _, pair := range pairs {
			out = append(out, pair+" "+where(s, ties[pair].cells))
		}
		lead := "no difference between the two fastest: "
		if none {
			lead = "no strategy is fastest beyond the noise anywhere; the two fastest: "
		}
		return lead + strings.Join(out, ", ")
	}
	return ""
}

// where says a set of (world size, sizes) cells in words: "at 4KiB–16MiB
// on 2 and 4 ranks", or "at 4KiB–64KiB on 2 ranks and at 1MiB on 4 ranks"
// when the sizes differ between world sizes. Sizes next to each other in
// the sweep make one range.
func where(s *section, cells map[int][]int64) string {
	type group struct {
		sizes string
		nps   []int
	}
	var groups []group
	for _, np := range s.nps {
		sizes := cells[np]
		if len(sizes) == 0 {
			continue
		}
		text := sizeRuns(s.sizes, sizes)
		if i := slices.IndexFunc(groups, func(g group) bool { return g.sizes == text }); i >= 0 {
			groups[i].nps = append(groups[i].nps, np)
			continue
		}
		groups = append(groups, group{text, []int{np}})
	}
	var out []string
	for _, g := range groups {
		out = append(out, fmt.Sprintf("at %s on %s", g.sizes, rankList(g.nps)))
	}
	return strings.Join(out, " and ")
}

// sizeRuns says sizes, a subset of all (both sorted), as ranges of
// neighbours in all: "4KiB–64KiB, 1MiB".
func sizeRuns(all, sizes []int64) string {
	var runs []string
	for i := 0; i < len(sizes); {
		j := i
		k := slices.Index(all, sizes[i])
		for j+1 < len(sizes) && k+1 < len(all) && all[k+1] == sizes[j+1] {
			j, k = j+1, k+1
		}
		runs = append(runs, sizeRange(sizes[i], sizes[j]))
		i = j + 1
	}
	return joinAnd(runs)
}

// rankList is "2 ranks", "2 and 4 ranks", "2, 4 and 8 ranks".
func rankList(nps []int) string {
	words := make([]string, len(nps))
	for i, np := range nps {
		words[i] = fmt.Sprint(np)
	}
	unit := " ranks"
	if len(nps) == 1 && nps[0] == 1 {
		unit = " rank"
	}
	return joinAnd(words) + unit
}

func joinAnd(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// psHeadline is the parameter server's factor over all of s's world sizes:
// "The parameter server takes 1.2–3.4× the best allreduce's time." Where
// every cell's interval spans 1 it reads "no different from"; "" without a
// parameter server or anything to hold it against.
func psHeadline(s *section) string {
	f := psFactors(s, s.nps)
	if f.n == 0 {
		return ""
	}
	other := "the fastest other strategy's time"
	if s.key.collective == "allreduce" {
		other = "the best allreduce's time"
	}
	if f.spansOne == f.n {
		return "The parameter server's time is no different from " + other + "."
	}
	text := fmt.Sprintf("%.1f×", f.lo)
	if fmt.Sprintf("%.1f", f.lo) != fmt.Sprintf("%.1f", f.hi) {
		text = fmt.Sprintf("%.1f–%.1f×", f.lo, f.hi)
	}
	return "The parameter server takes " + text + " " + other + "."
}

// psStats is the parameter server's time over the fastest other
// strategy's, over a set of cells: the range of the ratios, the bounds of
// their 95% intervals (NaN where a cell has none), how many cells, and how
// many of those have an interval that spans 1.
type psStats struct {
	lo, hi, ciLo, ciHi float64
	n, spansOne        int
	at                 []int64
}

func psFactors(s *section, nps []int) psStats {
	st := psStats{lo: math.Inf(1), ciLo: math.Inf(1)}
	for _, name := range s.series {
		if s.base[name] != "ps" || s.peer[name] {
			continue
		}
		for _, np := range nps {
			for _, b := range s.sizes {
				ps := s.at(name, np, b)
				if ps == nil || ps.TimeUs <= 0 {
					continue
				}
				var best *results.Record
				bestName := ""
				for _, other := range s.series {
					if r := s.at(other, np, b); r != nil && !s.peer[other] && !isPS(s.base[other]) && r.TimeUs > 0 && (best == nil || r.TimeUs < best.TimeUs) {
						best, bestName = r, other
					}
				}
				if best == nil {
					continue
				}
				f := ps.TimeUs / best.TimeUs
				st.lo, st.hi = math.Min(st.lo, f), math.Max(st.hi, f)
				l, h := ratioCI(best, ps, fmt.Sprintf("%s/np=%d/bytes=%d/%s/%s", s.slug, np, b, bestName, name))
				st.ciLo, st.ciHi = math.Min(st.ciLo, 1+l), math.Max(st.ciHi, 1+h) // NaN stays NaN
				if 1+l <= 1 && 1+h >= 1 {
					st.spansOne++
				}
				st.n++
				if !slices.Contains(st.at, b) {
					st.at = append(st.at, b)
				}
			}
		}
	}
	slices.Sort(st.at)
	return st
}
