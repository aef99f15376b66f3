package reports

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// xErrXYs adapts points with a confidence interval to plotter.XErrorer.
type xErrXYs struct {
	plotter.XYs
	lo, hi []float64
}

func (e xErrXYs) XError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

var verdictColors = map[Verdict]color.RGBA{
	Worse:    {214, 39, 40, 255},
	Better:   {44, 160, 44, 255},
	Same:     {127, 127, 127, 255},
	TooNoisy: {255, 127, 14, 255},
}

// plotChanges draws every compared point's change of median time with its
// confidence interval, one row per point, coloured by verdict, with the
// gate in force at each point marked on its row (the threshold, raised by
// the point's noise): a regression is a red dot right of its gate. The axis
// covers the changes and the gates, not the widest interval: one interval
// of hundreds of percent would squeeze every other row into a line, so
// intervals run off the edge instead.
func (c *Comparison) plotChanges(dir string) (string, error) {
	var shown []PointComparison
	for _, p := range c.Points {
		if !math.IsNaN(p.Change) && p.Verdict != Missing {
			shown = append(shown, p)
		}
	}
	if len(shown) == 0 {
		return "", nil
	}
	// The first point goes at the top, as in the table.
	names := make([]string, len(shown))
	groups := map[Verdict]*xErrXYs{}
	for i, p := range shown {
		y := float64(len(shown) - 1 - i)
		names[len(shown)-1-i] = p.Name
		g := groups[p.Verdict]
		if g == nil {
			g = &xErrXYs{}
			groups[p.Verdict] = g
		}
		lo, hi := 0.0, 0.0
		if !math.IsNaN(p.ChangeLo) {
			lo, hi = 100*(p.Change-p.ChangeLo), 100*(p.ChangeHi-p.Change)
		}
		g.XYs = append(g.XYs, plotter.XY{X: 100 * p.Change, Y: y})
		g.lo = append(g.lo, lo)
		g.hi = append(g.hi, hi)
	}
	p := plotNoGrid("Change of median time per point (positive: slower)", "change of median time (%)", "")
	p.Legend.Left = false
	p.NominalY(names...)
	lim := 2 * 100 * c.Options.Threshold
	for i, pc := range shown {
		y := float64(len(shown) - 1 - i)
		gate := 100 * pc.Threshold
		lim = math.Max(lim, 1.25*math.Max(math.Abs(100*pc.Change), gate))
		for _, x := range []float64{-gate, gate} {
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y - 0.35}, {X: x, Y: y + 0.35}})
			if err != nil {
				return "", err
			}
			l.Color = color.RGBA{80, 80, 80, 255}
			l.Width = vg.Points(1)
			p.Add(l)
			if i == 0 && x > 0 {
				p.Legend.Add("gate in force (threshold "+strconv.FormatFloat(100*c.Options.Threshold, 'f', -1, 64)+"%, raised by noise)", l)
			}
		}
	}
	xmin, xmax := -lim, lim
	zero, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.5}, {X: 0, Y: float64(len(names)) - 0.5}})
	if err != nil {
		return "", err
	}
	zero.Color = color.RGBA{80, 80, 80, 255}
	zero.Width = vg.Points(0.75)
	zero.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(zero)
	labels := map[Verdict]string{Worse: "worse", Better: "better", Same: "no significant change", TooNoisy: "too noisy to judge"}
	for _, v := range []Verdict{Worse, Better, Same, TooNoisy} {
		g := groups[v]
		if g == nil {
			continue
		}
		sc, err := plotter.NewScatter(g.XYs)
		if err != nil {
			return "", err
		}
		sc.Color = verdictColors[v]
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(3)
		eb, err := plotter.NewXErrorBars(*g)
		if err != nil {
			return "", err
		}
		eb.Color = verdictColors[v]
		eb.CapWidth = vg.Points(5)
		p.Add(eb, sc)
		p.Legend.Add(labels[v], sc)
	}
	p.X.Min, p.X.Max = xmin, xmax
	// Keep empty rows above the points for the legend: it needs about
	// 14pt an entry, and a row is the data area's height over the rows.
	n := float64(len(names))
	h := max(plotH, vg.Length(n)*0.22*vg.Inch+1.8*vg.Inch)
	legend := float64(vg.Points(14*float64(len(groups)+1) + 8))
	data := float64(h - 1.1*vg.Inch)
	extra := legend * n / max(data-legend, data/4)
	p.Y.Min, p.Y.Max = -0.5, n-0.5+extra
	return save(p, dir, "compare", 9*vg.Inch, h)
}
