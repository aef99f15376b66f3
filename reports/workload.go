package reports

import (
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/distbench/distbench/results"
)

// A workload's points (Record.Workload: a model's DDP gradient buckets,
// "resnet20 DDP bucket") are sizes a model chose, not steps of a sweep: a
// line through them and the powers of two beside them zig-zags, and reads
// as noise. Plots against size draw them as markers of their own, in their
// strategy's colour, named in the legend and annotated with their size.

// workloads returns the workloads s's points replay, sorted.
func (s *section) workloads() []string {
	var ws []string
	for _, r := range s.pts {
		if r.Workload != "" && !slices.Contains(ws, r.Workload) {
			ws = append(ws, r.Workload)
		}
	}
	slices.Sort(ws)
	return ws
}

// workloadAt is the workload that size b replays at world size np, or ""
// for a size that only a sweep measured.
func (s *section) workloadAt(np int, b int64) string {
	w := ""
	for _, name := range s.series {
		if r := s.at(name, np, b); r != nil && r.Workload != "" && (w == "" || r.Workload < w) {
			w = r.Workload
		}
	}
	return w
}

// sizeLabel names size b in a table's row: "1MiB", or
// "29,888 B (resnet20 DDP bucket)" for a workload's size.
func (s *section) sizeLabel(np int, b int64) string {
	if w := s.workloadAt(np, b); w != "" {
		return bytesText(b) + " (" + w + ")"
	}
	return results.FormatSize(b)
}

// sizeHeader names size b in a table's column, whatever the world size:
// "1MiB", or "29,888 B (resnet20 DDP bucket)".
func (s *section) sizeHeader(b int64) string {
	for _, np := range s.nps {
		if s.workloadAt(np, b) != "" {
			return s.sizeLabel(np, b)
		}
	}
	return results.FormatSize(b)
}

// workloadName is the legend's name for series' points of workload w.
func workloadName(series, w string) string { return series + ": " + w }

// bytesText writes a byte count with its digits grouped, "29,888 B": a
// model's sizes are rarely round in binary units.
func bytesText(b int64) string {
	s := strconv.FormatInt(b, 10)
	neg := b < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out) + " B"
	}
	return string(out) + " B"
}

// workloadGlyphs mark workload points, one per workload of a section: a
// diamond, which no line's marker is.
var workloadGlyphs = []draw.GlyphDrawer{diamondGlyph{}, diamondGlyph{hollow: true}}

// diamondGlyph is a square stood on its corner, filled or hollow.
type diamondGlyph struct{ hollow bool }

func (g diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 1.5
	p := make(vg.Path, 0, 5)
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	if g.hollow {
		c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.2)})
		c.Stroke(p)
		return
	}
	c.SetColor(sty.Color)
	c.Fill(p)
}

// annotateSizes writes each workload point's size above and to the left of
// everything drawn where the label goes (markers, error bars, lines
// passing), once however many strategies measured it. The x axis is a log
// scale, p's y axis one or not; the plot is plotW wide.
func annotateSizes(p *plot.Plot, ss []series) error {
	var xs []float64
	for _, s := range ss {
		for _, xy := range s.xy {
			if s.marksOnly && !slices.Contains(xs, xy.X) {
				xs = append(xs, xy.X)
			}
		}
	}
	if len(xs) == 0 || p.X.Min <= 0 || p.X.Max <= p.X.Min {
		return nil
	}
	slices.Sort(xs)
	var d plotter.XYLabels
	for _, x := range xs {
		d.XYs = append(d.XYs, plotter.XY{X: x})
		d.Labels = append(d.Labels, bytesText(int64(x)))
	}
	l, err := plotter.NewLabels(d)
	if err != nil {
		return err
	}
	// Up and to the left, where lines that rise with size (time, and
	// bandwidth until it levels off) run lower.
	l.Offset = vg.Point{X: vg.Points(-2), Y: vg.Points(5)}
	// How far left a label reaches, in octaves: the data area is most of
	// the plot's width.
	perPt := math.Log2(p.X.Max/p.X.Min) / float64(0.8*plotW)
	logY := isLog(p.Y.Scale)
	for i := range l.TextStyle {
		sty := &l.TextStyle[i]
		sty.XAlign = draw.XRight
		sty.Font.Size = vg.Points(8)
		sty.Color = color.Gray{Y: 60}
		x := d.XYs[i].X
		reach := float64(sty.Width(d.Labels[i])-l.Offset.X) * perPt
		top := math.Inf(-1)
		for _, s := range ss {
			top = math.Max(top, highestIn(s, x/math.Exp2(reach), x, logY))
		}
		l.XYs[i].Y = top
	}
	p.Add(l)
	return nil
}

// highestIn is the highest that s is drawn between sizes lo and hi: its
// points there (and a marker's width beyond) with their error bars, and, for
// a line, where it crosses lo and hi (straight on the canvas: linear in log
// x, and in log y on a log axis). It is -Inf where s draws nothing there.
func highestIn(s series, lo, hi float64, logY bool) float64 {
	top := math.Inf(-1)
	for i, xy := range s.xy {
		if xy.X >= lo/1.1 && xy.X <= hi*1.1 {
			y := xy.Y
			if i < len(s.hi) {
				y += s.hi[i]
			}
			top = math.Max(top, y)
		}
		if s.marksOnly || i == 0 {
			continue
		}
		a, b := s.xy[i-1], xy
		for _, x := range []float64{lo, hi} {
			if a.X >= x || b.X <= x {
				continue
			}
			f := math.Log(x/a.X) / math.Log(b.X/a.X)
			y := a.Y + f*(b.Y-a.Y)
			if logY && a.Y > 0 && b.Y > 0 {
				y = a.Y * math.Pow(b.Y/a.Y, f)
			}
			top = math.Max(top, y)
		}
	}
	return top
}

// sizeSeries builds the series of a plot against message size at world
// size np, with each point's y and its error distances (down, up) from val:
// for each series of s, a line through the sizes a sweep stepped through
// and, for each workload, that workload's points as markers alone. cols
// lists the series of s with points at np, for the table beside the plot.
func (rp *report) sizeSeries(s *section, np int, val func(*results.Record) (y, lo, hi float64)) (ss []series, cols []string) {
	ws := s.workloads()
	for i, name := range s.series {
		line := series{name: name, color: rp.colors.of(s.base[name]), shape: i, dashed: s.peer[name]}
		marks := make([]series, len(ws))
		for k, w := range ws {
			marks[k] = series{name: workloadName(name, w), color: line.color, shape: i, marksOnly: true,
				glyph: workloadGlyphs[k%len(workloadGlyphs)]}
		}
		for _, b := range s.sizes {
			r := s.at(name, np, b)
			if r == nil || b <= 0 {
				continue
			}
			sr := &line
			if r.Workload != "" {
				sr = &marks[slices.Index(ws, r.Workload)]
			}
			y, lo, hi := val(r)
			sr.xy = append(sr.xy, plotter.XY{X: float64(b), Y: y})
			sr.lo, sr.hi = append(sr.lo, lo), append(sr.hi, hi)
			sr.tips = append(sr.tips, recordTip(name, r))
		}
		had := len(ss)
		for _, sr := range append([]series{line}, marks...) {
			if len(sr.xy) > 0 {
				ss = append(ss, sr)
			}
		}
		if len(ss) > had {
			cols = append(cols, name)
		}
	}
	return ss, cols
}
