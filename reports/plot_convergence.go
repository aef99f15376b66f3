package reports

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/distbench/distbench/results"
)

// stepAxis returns the x of each step record: Step as recorded when it grows
// through the run (a global step), or, when it restarts every epoch, Step
// plus the steps of the epochs before.
func stepAxis(rs []*results.Record) []float64 {
	xs := make([]float64, len(rs))
	offset, prev := 0, -1
	for i, r := range rs {
		if r.Step < prev {
			offset += prev + 1
		}
		prev = r.Step
		xs[i] = float64(offset + r.Step)
	}
	return xs
}

// writeConvergence draws how training converges under each strategy: loss
// against step (does the strategy change the maths?), loss against wall time
// (does it get there sooner?) and test accuracy against epoch.
func (rp *report) writeConvergence(g *trainGroup) error {
	var byStep, byTime, byEpoch []series
	cols := rp.colors.trainColors(g)
	for i, name := range g.series {
		col := cols[name]
		steps := g.steps[name]
		xs := stepAxis(steps)
		st := series{name: name, color: col, shape: i}
		tm := series{name: name, color: col, shape: i}
		for k, r := range steps {
			if r.Loss == 0 {
				continue
			}
			st.xy = append(st.xy, plotter.XY{X: xs[k], Y: r.Loss})
			if r.WallSeconds > 0 {
				tm.xy = append(tm.xy, plotter.XY{X: r.WallSeconds, Y: r.Loss})
			}
		}
		ep := series{name: name, color: col, shape: i}
		for _, r := range g.epochs[name] {
			if r.TestAcc > 0 {
				ep.xy = append(ep.xy, plotter.XY{X: float64(r.Epoch), Y: accPct(g, r.TestAcc)})
			}
		}
		st.raw, st.xy = st.xy, smooth(st.xy)
		tm.raw, tm.xy = tm.xy, smooth(tm.xy)
		byStep = appendNonEmpty(byStep, st)
		byTime = appendNonEmpty(byTime, tm)
		byEpoch = appendNonEmpty(byEpoch, ep)
	}
	var epochs intTicks
	for _, s := range byEpoch {
		for _, xy := range s.xy {
			if e := int(xy.X); !slices.Contains(epochs, e) {
				epochs = append(epochs, e)
			}
		}
	}
	slices.Sort(epochs)
	plots := []struct {
		ss                   []series
		file, title, x, y    string
		legendTop, legendLft bool
		xTicks               plot.Ticker // nil: gonum's default
		percent              bool        // a 0–100% axis, whatever the data
	}{
		{byStep, "loss_step_", "training loss by step", "step", "training loss", true, false, nil, false},
		{byTime, "loss_time_", "training loss by wall time", "wall time (s)", "training loss", true, false, nil, false},
		{byEpoch, "accuracy_", "test accuracy by epoch", "epoch", "test accuracy (%)", false, false, epochs, true},
	}
	for _, pl := range plots {
		if len(pl.ss) == 0 {
			continue
		}
		p := newPlot(g.title+": "+pl.title, pl.x, pl.y)
		p.Legend.Top, p.Legend.Left = pl.legendTop, pl.legendLft
		if pl.xTicks != nil {
			p.X.Tick.Marker = pl.xTicks
		}
		if err := addSeries(p, pl.ss); err != nil {
			return err
		}
		if pl.percent {
			// Accuracy is read against its whole range: an axis fitted to
			// the data makes 97% and 98% look worlds apart, and gonum's
			// padding ran it past 100%.
			p.Y.Min, p.Y.Max = 0, 100
		}
		if pl.legendTop {
		}
		rel, err := save(p, rp.dir, pl.file+g.slug, plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.img(g.title+": "+pl.title, rel)
	}

	if len(byEpoch) > 0 {
		if err := rp.epochTable(g); err != nil {
			return err
		}
	}

	// The table: where each series ended up.
	t := &table{header: []string{"series", "epochs", "steps", "final loss", "final test loss", "final test accuracy (%)", "images/s", "wall time (s)"}}
	for _, name := range g.series {
		row := []string{name, "", fmt.Sprint(len(g.steps[name])), "", "", "", "", ""}
		if st := g.steps[name]; len(st) > 0 {
			last := st[len(st)-1]
			row[3] = num(last.Loss)
			row[7] = num(last.WallSeconds)
		}
		if ep := g.epochs[name]; len(ep) > 0 {
			last := ep[len(ep)-1]
			row[1] = fmt.Sprint(len(ep))
			if last.Loss > 0 {
				row[3] = num(last.Loss)
			}
			row[4] = num(last.TestLoss)
			row[5] = num(accPct(g, last.TestAcc))
			row[6] = num(last.ImagesPerS)
			if last.WallSeconds > 0 {
				row[7] = num(last.WallSeconds)
			}
		}
		t.add(row...)
	}
	if err := rp.m.table(t); err != nil {
		return err
	}
	return rp.writeTarget(g)
}

// accPct shows accuracy in percent whether records hold a fraction or a
// percentage: a group whose accuracies are all at most 1 holds fractions.
func accPct(g *trainGroup, acc float64) float64 {
	for _, rs := range g.epochs {
		for _, r := range rs {
			if r.TestAcc > 1 {
				return acc
			}
		}
	}
	return 100 * acc
}

func appendNonEmpty(ss []series, s series) []series {
	if len(s.xy) == 0 {
		return ss
	}
	return append(ss, s)
}

// epochTable tabulates the accuracy plot: test accuracy per epoch and series.
func (rp *report) epochTable(g *trainGroup) error {
	var epochs []int
	acc := map[string]map[int]float64{}
	for _, name := range g.series {
		acc[name] = map[int]float64{}
		for _, r := range g.epochs[name] {
			if r.TestAcc <= 0 {
				continue
			}
			acc[name][r.Epoch] = accPct(g, r.TestAcc)
			if !slices.Contains(epochs, r.Epoch) {
				epochs = append(epochs, r.Epoch)
			}
		}
	}
	slices.Sort(epochs)
	t := &table{header: []string{"epoch"}}
	for _, name := range g.series {
		t.header = append(t.header, name+" test accuracy (%)")
	}
	for _, e := range epochs {
		row := []string{fmt.Sprint(e)}
		for _, name := range g.series {
			v := ""
			if a, ok := acc[name][e]; ok {
				v = num(a)
			}
			row = append(row, v)
		}
		t.add(row...)
	}
	return rp.m.table(t)
}

// smooth is a centred moving average of xy's y over a window of about a
// tenth of the points (at least 5, shrinking at the ends): a loss's step to
// step noise hides the trend that the plot is for. Series too short to
// smooth come back as they are.
func smooth(xy plotter.XYs) plotter.XYs {
	half := len(xy) / 20
	if half < 2 {
		return xy
	}
	out := make(plotter.XYs, len(xy))
	for i := range xy {
		lo, hi := max(0, i-half), min(len(xy), i+half+1)
		sum := 0.0
		for _, p := range xy[lo:hi] {
			sum += p.Y
		}
		out[i] = plotter.XY{X: xy[i].X, Y: sum / float64(hi-lo)}
	}
	return out
}
