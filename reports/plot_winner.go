package reports

import (
	"fmt"
	"hash/fnv"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// winner is the outcome of one (world size, message size) cell: the strategy
// with the lowest median time and how far behind the runner-up is.
type winner struct {
	np     int
	bytes  int64
	best   string
	runner string  // "" when only one strategy was measured
	margin float64 // runner-up time / best time − 1
	// marginLo and marginHi are the margin's 95% bootstrap confidence
	// interval, from the two points' per-iteration samples; NaN when either
	// has fewer than 2 (records written without samples).
	marginLo, marginHi float64
	// overlap is set when the two confidence intervals overlap or, for
	// points measured in rounds, when the winner was not faster in every
	// round: the order may be noise.
	overlap bool
}

// tie reports whether the cell's order is inside the noise: no winner.
func (w winner) tie() bool { return w.runner != "" && w.overlap }

// text is the cell as the table shows it: a tie names both strategies and
// no margin, since a margin inside the noise is not a result.
func (w winner) text() string {
	switch {
	case w.runner == "":
		return w.best + " (only)"
	case w.tie():
		return "tie: " + tieNames(w)
	}
	return fmt.Sprintf("%s %s", w.best, pct(w.margin))
}

// tieNames is a tie's two strategies in name order, so that reruns whose
// noise swaps them print the same cell.
func tieNames(w winner) string {
	a, b := w.best, w.runner
	if b < a {
		a, b = b, a
	}
	return a + " ≈ " + b
}

// tieColor is a tied cell's colour: no strategy's.
var tieColor = color.RGBA{R: 0xe4, G: 0xe4, B: 0xe4, A: 0xff}

// winners decides every cell of s among distbench's strategies. Peers are
// references, not choices a distbench user can make, so they are left out
// here; the busbw plots show how the winner compares with them.
func winners(s *section) map[[2]int64]winner {
	out := map[[2]int64]winner{}
	for _, np := range s.nps {
		for _, b := range s.sizes {
			type cand struct {
				name string
				r    *results.Record
			}
			var cs []cand
			for _, name := range s.series {
				if r := s.at(name, np, b); r != nil && !s.peer[name] {
					cs = append(cs, cand{name, r})
				}
			}
			if len(cs) == 0 {
				continue
			}
			slices.SortStableFunc(cs, func(a, b cand) int {
				if a.r.TimeUs != b.r.TimeUs {
					if a.r.TimeUs < b.r.TimeUs {
						return -1
					}
					return 1
				}
				return strings.Compare(a.name, b.name)
			})
			w := winner{np: np, bytes: b, best: cs[0].name, marginLo: math.NaN(), marginHi: math.NaN()}
			if len(cs) > 1 {
				best, next := cs[0].r, cs[1].r
				w.runner = cs[1].name
				w.margin = next.TimeUs/best.TimeUs - 1
				w.marginLo, w.marginHi = ratioCI(best, next, fmt.Sprintf("%s/np=%d/bytes=%d/%s/%s", s.slug, np, b, w.best, w.runner))
				if best.TimeUsCIHi > 0 && next.TimeUsCILo > 0 {
					w.overlap = best.TimeUsCIHi >= next.TimeUsCILo
				}
				// Measured in rounds, a win must hold in every round: the
				// machine's speed moves in steps, and a step during one
				// strategy's round moves its pooled samples, and their
				// interval, as a real difference would.
				if len(best.RoundMediansUs) >= MinCompareRounds && len(next.RoundMediansUs) >= MinCompareRounds {
					w.overlap = w.overlap || slices.Max(best.RoundMediansUs) >= slices.Min(next.RoundMediansUs)
				}
			}
			out[[2]int64{int64(np), b}] = w
		}
	}
	return out
}

// ratioCI is the 95% bootstrap confidence interval of
// median(of) / median(base) − 1 from the two records' per-iteration samples
// (a point in rounds pools its rounds' samples, as its median does), NaN
// without at least 2 of each. The bootstrap is seeded from key, so that the
// same run always gives the same report.
func ratioCI(base, of *results.Record, key string) (lo, hi float64) {
	h := fnv.New64a()
	h.Write([]byte(key))
	return stats.MedianRatioCI(base.SamplesUs, of.SamplesUs, h.Sum64())
}

// winnerLabel is a cell's text on the map: two short lines, to fit.
func winnerLabel(w winner) string {
	switch {
	case w.runner == "":
		return w.best + "\nonly"
	case w.tie():
		a, b, _ := strings.Cut(tieNames(w), " ≈ ")
		return a + " ≈\n" + b
	}
	return w.best + "\n" + pct(w.margin)
}

// winnerTip is a cell's hover details: the outcome, the margin's interval,
// and both points' times.
func winnerTip(s *section, w winner) string {
	tip := fmt.Sprintf("%d ranks, %s: %s", w.np, results.FormatSize(w.bytes), w.text())
	if w.runner != "" && !math.IsNaN(w.marginLo) {
		tip += fmt.Sprintf("\nrunner-up %s; margin 95%% CI %s", w.runner, pctSpan(w.marginLo, w.marginHi))
	}
	for _, name := range []string{w.best, w.runner} {
		if r := s.at(name, w.np, w.bytes); r != nil {
			tip += "\n" + recordTip(name, r)
		}
	}
	return tip
}

// writeWinners writes the winner map of s as a table and a heat map: rows are
// world sizes, columns message sizes, each cell coloured by the winning
// strategy and shaded by its margin (pale: a near tie).
func (rp *report) writeWinners(s *section) error {
	ws := winners(s)
	if len(ws) == 0 {
		return nil
	}
	rp.m.h(3, "Winner map")
	rp.m.text("For each world size and message size, the strategy with the lowest median time and its margin over the runner-up " +
		"(runner-up time / winner time − 1). Where the two 95% confidence intervals overlap, or, for points measured in rounds, the " +
		"winner was not faster in every round, the cell is a tie: the order is inside the noise, so no winner and no margin are shown, " +
		"and the tally counts only significant wins. Peers are not ranked.")

	p := plotNoGrid("Fastest strategy: "+s.title, "message size (bytes)", "world size (ranks)")
	sizeLabels := make([]string, len(s.sizes))
	for i, b := range s.sizes {
		sizeLabels[i] = results.FormatSize(b)
	}
	npLabels := make([]string, len(s.nps))
	for i, np := range s.nps {
		npLabels[i] = fmt.Sprint(np)
	}
	p.NominalX(sizeLabels...)
	p.NominalY(npLabels...)
	var labels plotter.XYLabels
	var tips []string
	wins := map[string]int{} // significant wins
	ties, only := 0, 0
	for j, np := range s.nps {
		for i, b := range s.sizes {
			w, ok := ws[[2]int64{int64(np), b}]
			if !ok {
				continue
			}
			// Margins of 50% and more get the full colour; a lone strategy
			// is pale, a tie grey.
			f := 0.75 * (1 - math.Min(w.margin/0.5, 1))
			switch {
			case w.tie():
				ties++
			case w.runner == "":
				f = 0.8
				only++
			default:
				wins[w.best]++
			}
			x, y := float64(i), float64(j)
			poly, err := plotter.NewPolygon(plotter.XYs{{X: x - 0.5, Y: y - 0.5}, {X: x + 0.5, Y: y - 0.5}, {X: x + 0.5, Y: y + 0.5}, {X: x - 0.5, Y: y + 0.5}})
			if err != nil {
				return err
			}
			poly.Color = lighten(rp.colors.of(s.base[w.best]), f)
			if w.tie() {
				poly.Color = tieColor
			}
			poly.LineStyle.Color = color.White
			poly.LineStyle.Width = vg.Points(1)
			p.Add(poly)
			labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: y})
			labels.Labels = append(labels.Labels, winnerLabel(w))
			tips = append(tips, winnerTip(s, w))
		}
	}
	lab, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i].Font.Size = vg.Points(8)
		lab.TextStyle[i].XAlign = -0.5 // centred on the cell
		lab.TextStyle[i].YAlign = -0.5
	}
	p.Add(lab)
	addTips(p, labels.XYs, tips)
	// Legend: one swatch per strategy that won somewhere, beside the map.
	var names []string
	for _, name := range s.series {
		if wins[name] > 0 {
			names = append(names, name)
		}
	}
	for _, name := range names {
		sw, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
		if err != nil {
			return err
		}
		sw.Color = rp.colors.of(s.base[name])
		p.Legend.Add(name, sw)
	}
	if ties > 0 {
		sw, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
		if err != nil {
			return err
		}
		sw.Color = tieColor
		p.Legend.Add("tie", sw)
	}
	p.X.Min, p.X.Max = -0.5, float64(len(s.sizes))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(s.nps))-0.5
	// A cell is wide enough for its two lines of 8-point text ("ring/shm
	// ≈", "+123.4%"); the legend and the axis take the rest.
	w := max(plotW, vg.Length(len(s.sizes))*0.95*vg.Inch+2.5*vg.Inch)
	h := max(plotH/2, vg.Length(len(s.nps))*0.7*vg.Inch+1.2*vg.Inch)
	rel, err := save(p, rp.dir, "winner_"+s.slug, w, h)
	if err != nil {
		return err
	}
	rp.m.img("winner map, "+s.title, rel)

	t := &table{header: []string{"ranks / size"}, left: map[int]bool{}}
	for i, b := range s.sizes {
		t.header = append(t.header, s.sizeHeader(b))
		t.left[i+1] = true
	}
	for _, np := range s.nps {
		row := []string{fmt.Sprint(np)}
		for _, b := range s.sizes {
			if w, ok := ws[[2]int64{int64(np), b}]; ok {
				row = append(row, w.text())
			} else {
				row = append(row, "")
			}
		}
		t.add(row...)
	}
	if err := rp.m.table(t); err != nil {
		return err
	}
	var tally []string
	for _, name := range names {
		tally = append(tally, fmt.Sprintf("%s %d", name, wins[name]))
	}
	if len(tally) == 0 {
		tally = append(tally, "none")
	}
	line := fmt.Sprintf("Cells won significantly: %s; ties %d", strings.Join(tally, ", "), ties)
	if only > 0 {
		line += fmt.Sprintf("; one strategy only %d", only)
	}
	rp.m.p("%s; of %d cells.", line, len(ws))
	return nil
}

var _ plot.Thumbnailer = (*plotter.Polygon)(nil)
