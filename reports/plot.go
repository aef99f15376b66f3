package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/distbench/distbench/results"
)

// Plot size: wide enough for eight sizes with the legend beside them, and
// readable when a markdown viewer scales it to the page.
const (
	plotW = 9 * vg.Inch
	plotH = 5 * vg.Inch
)

// palette is Tableau 10: distinct hues that survive colour-blindness and
// greyscale printing better than plotutil's defaults.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255},
}

var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// colors gives each strategy or peer one colour for the whole report, so that
// "ring" is the same blue in every plot.
type colors map[string]color.RGBA

func newColors(names []string) colors {
	c := colors{}
	for _, n := range names {
		if _, ok := c[n]; !ok {
			c[n] = palette[len(c)%len(palette)]
		}
	}
	return c
}

func (c colors) of(name string) color.RGBA {
	if col, ok := c[name]; ok {
		return col
	}
	return palette[7] // grey for anything unplanned
}

// trainColors gives each training series of g a colour of its own: its
// strategy's where it is the first series of that strategy, so that ring
// is the same blue as in the collectives' plots, else a palette colour no
// strategy of the report and no other series here has (ps-sync and
// ps-async are both the parameter server, and must not share one).
func (c colors) trainColors(g *trainGroup) map[string]color.RGBA {
	used := map[color.RGBA]bool{}
	for _, col := range c {
		used[col] = true
	}
	out := map[string]color.RGBA{}
	taken := map[string]bool{}
	next := 0
	for _, name := range g.series {
		base := g.base[name]
		if col, ok := c[base]; ok && !taken[base] {
			out[name], taken[base] = col, true
			continue
		}
		col := palette[7]
		for ; next < 2*len(palette); next++ {
			if cand := palette[next%len(palette)]; !used[cand] || next >= len(palette) {
				col = cand
				break
			}
		}
		next++
		used[col] = true
		out[name] = col
	}
	return out
}

// lighten mixes col with white; f = 0 is col, f = 1 white.
func lighten(col color.RGBA, f float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f + 0.5) }
	return color.RGBA{mix(col.R), mix(col.G), mix(col.B), 255}
}

func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plotNoGrid(title, xLabel, yLabel)
	p.Add(plotter.NewGrid())
	return p
}

// plotNoGrid is newPlot for plots whose cells or bars a grid would cross.
func plotNoGrid(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(20)
	return p
}

// series is one line of a line plot.
type series struct {
	name   string
	color  color.RGBA
	shape  int
	dashed bool
	xy     plotter.XYs
	// lo and hi, when set, are the distances from each y down and up to its
	// confidence bounds, drawn as error bars.
	lo, hi []float64
	// raw, when set, is drawn faint behind xy: the unsmoothed points that
	// xy smooths (a loss curve's steps).
	raw plotter.XYs
	// marksOnly draws markers and no line: points that are not steps of
	// a sweep (a workload's sizes). glyph, when set, is their marker
	// instead of shapes[shape].
	marksOnly bool
	glyph     draw.GlyphDrawer
	// tips, when set, are each point's hover details in the SVG.
	tips []string
}

// markEvery is how many points apart a dense series' markers go: enough to
// tell series of one colour apart without hiding the line.
func markEvery(n int) int { return max(1, n/15) }

// errXYs adapts a series to plotter.YErrorer.
type errXYs struct {
	plotter.XYs
	lo, hi []float64
}

func (e errXYs) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

// addSeries draws ss as lines with markers (or markers alone) and optional
// error bars, and puts them in the legend.
func addSeries(p *plot.Plot, ss []series) error {
	for _, s := range ss {
		if len(s.xy) == 0 {
			continue
		}
		if len(s.raw) > 0 {
			faint, err := plotter.NewLine(s.raw)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			faint.Color = color.NRGBA{s.color.R, s.color.G, s.color.B, 60} // not premultiplied
			faint.Width = vg.Points(0.75)
			p.Add(faint)
		}
		marks := s.xy
		if k := markEvery(len(s.xy)); k > 1 && !s.marksOnly {
			marks = nil
			for i := 0; i < len(s.xy); i += k {
				marks = append(marks, s.xy[i])
			}
		}
		pts, err := plotter.NewScatter(marks)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		pts.Color = s.color
		pts.Shape = shapes[s.shape%len(shapes)]
		if s.glyph != nil {
			pts.Shape = s.glyph
		}
		pts.Radius = vg.Points(2.5)
		thumbs := []plot.Thumbnailer{pts}
		if s.marksOnly {
			p.Add(pts)
		} else {
			line, err := plotter.NewLine(s.xy)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			line.Color = s.color
			line.Width = vg.Points(1.5)
			if s.dashed {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(line, pts)
			thumbs = []plot.Thumbnailer{line, pts}
		}
		if hasErrors(s.lo, s.hi) {
			eb, err := plotter.NewYErrorBars(errXYs{s.xy, s.lo, s.hi})
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			eb.Color = s.color
			eb.CapWidth = vg.Points(5)
			p.Add(eb)
		}
		p.Legend.Add(s.name, thumbs...)
		addTips(p, s.xy, s.tips)
	}
	return nil
}

func hasErrors(lo, hi []float64) bool {
	for i := range lo {
		if lo[i] != 0 || hi[i] != 0 {
			return true
		}
	}
	return false
}

// padRange widens an axis that holds a single value, which would otherwise
// have zero extent (and a division by zero on a log scale).
func padRange(a *plot.Axis, log bool) {
	if a.Min != a.Max {
		return
	}
	switch {
	case log && a.Min > 0:
		a.Min, a.Max = a.Min/2, a.Max*2
	case a.Min == 0:
		a.Min, a.Max = -1, 1
	default:
		d := math.Abs(a.Min) / 2
		a.Min, a.Max = a.Min-d, a.Max+d
	}
}

// save writes p as RUN_DIR/plots/name.png and name.svg and returns the path relative to
// the run directory, as the markdown links it.
func save(p *plot.Plot, dir, name string, w, h vg.Length) (string, error) {
	padRange(&p.X, isLog(p.X.Scale))
	padRange(&p.Y, isLog(p.Y.Scale))
	rel := "plots/" + name + ".png"
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		return "", err
	}
	if err := saveSVG(p, w, h, svgName(dir, rel)); err != nil {
		return "", fmt.Errorf("plot %s: %w", name, err)
	}
	c := vgimg.New(w, h)
	drawPlot(p, draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return "", fmt.Errorf("plot %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("plot %s: %w", name, err)
	}
	return rel, nil
}

// legendGap is the room between the plot and a legend beside it.
const legendGap = 10 * vg.Millimeter / 2

// drawPlot draws p on c with its legend to the right of the plot, beside
// the data rather than on it: gonum draws a legend inside the data area,
// where it hides points whatever corner it takes.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	leg := p.Legend
	r := leg.Rectangle(c)
	lw := r.Max.X - r.Min.X
	if lw <= 0 {
		p.Draw(c)
		return
	}
	empty := plot.NewLegend()
	p.Legend = empty
	defer func() { p.Legend = leg }()
	p.Draw(draw.Crop(c, 0, -(lw + 2*legendGap), 0, 0))
	top := c.Max.Y
	if p.Title.Text != "" {
		top -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	side := c
	side.Min.X, side.Max.X, side.Max.Y = c.Max.X-lw-legendGap, c.Max.X-legendGap, top
	leg.Left, leg.Top, leg.XOffs, leg.YOffs = true, true, 0, 0
	leg.Draw(side)
}

func isLog(s plot.Normalizer) bool {
	_, ok := s.(plot.LogScale)
	return ok
}

// sizeTicks marks a log₂ axis of byte counts at powers of two, labelled in
// binary units (1KiB, 4KiB, 16KiB, …), thinned so that labels do not collide.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 {
		return nil
	}
	e0 := max(int(math.Floor(math.Log2(lo))), 0)
	e1 := int(math.Ceil(math.Log2(hi)))
	step := 1
	for (e1-e0)/step > 8 {
		step *= 2
	}
	var ticks []plot.Tick
	for e := e0; e <= e1 && e < 63; e++ {
		t := plot.Tick{Value: math.Ldexp(1, e)}
		if e%step == 0 {
			t.Label = results.FormatSize(int64(1) << e)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// logTicks marks a log₁₀ axis at 1-2-5 steps, or at powers of ten when the
// range spans many decades. plot.LogTicks labels only powers of ten, which
// leaves a narrow range (most latency plots) without a single label.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 {
		return nil
	}
	d0 := int(math.Floor(math.Log10(lo)))
	d1 := int(math.Ceil(math.Log10(hi)))
	mants := []float64{1, 2, 5}
	if d1-d0 > 4 {
		mants = []float64{1}
	}
	var ticks []plot.Tick
	for d := d0; d <= d1; d++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, float64(d))
			t := plot.Tick{Value: v}
			for _, mm := range mants {
				if float64(m) == mm {
					t.Label = strconv.FormatFloat(v, 'f', -1, 64)
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// intTicks marks a linear axis at the given integers (world sizes).
type intTicks []int

func (t intTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := make([]plot.Tick, 0, len(t))
	for _, v := range t {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
	}
	return ticks
}

// slug turns a title into a file name part.
func slug(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('_')
		}
		for _, r := range strings.ToLower(p) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
				b.WriteRune(r)
			default:
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}
