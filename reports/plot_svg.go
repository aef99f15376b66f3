package reports

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/distbench/distbench/results"
)

// Every plot is written twice: as PNG, which any markdown viewer shows, and
// as SVG, which scales without blur and which report.html inlines. The SVG
// carries hover details: each data point a plot marks with a tip gets an
// invisible circle with a <title> (median, p95, samples, interval), which
// browsers show on hover with no script. Where the points lie is known only
// when the plot is drawn (the axes' ranges and the legend's room decide
// it), so a hoverMarks plotter, drawn with the others, records them.

// hoverTip is one point's details at its place on the drawn canvas, in
// points from the bottom left, as vg draws.
type hoverTip struct {
	x, y float64
	text string
}

// hoverMarks records where its points land when the plot is drawn; it
// draws nothing itself.
type hoverMarks struct {
	xy   plotter.XYs
	tips []string
}

// tipSinks collects, per plot being saved, the tips its hoverMarks found.
var tipSinks = struct {
	sync.Mutex
	m map[*plot.Plot]*[]hoverTip
}{m: map[*plot.Plot]*[]hoverTip{}}

// addTips adds hover details for the points xy of p.
func addTips(p *plot.Plot, xy plotter.XYs, tips []string) {
	if len(tips) == 0 {
		return
	}
	p.Add(&hoverPlotter{owner: p, hoverMarks: hoverMarks{xy: xy, tips: tips}})
}

type hoverPlotter struct {
	owner *plot.Plot
	hoverMarks
}

func (h *hoverPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	tipSinks.Lock()
	sink := tipSinks.m[h.owner]
	tipSinks.Unlock()
	if sink == nil {
		return // drawn outside save (the PNG): nothing to record
	}
	tx, ty := p.Transforms(&c)
	for i, pt := range h.xy {
		if i >= len(h.tips) || h.tips[i] == "" {
			continue
		}
		if (isLog(p.X.Scale) && pt.X <= 0) || (isLog(p.Y.Scale) && pt.Y <= 0) {
			continue
		}
		x, y := tx(pt.X), ty(pt.Y)
		if !c.Contains(vg.Point{X: x, Y: y}) {
			continue
		}
		*sink = append(*sink, hoverTip{x: x.Points(), y: y.Points(), text: h.tips[i]})
	}
}

// saveSVG draws p as SVG at w×h, its hover tips added, to path.
func saveSVG(p *plot.Plot, w, h vg.Length, path string) error {
	var tips []hoverTip
	tipSinks.Lock()
	tipSinks.m[p] = &tips
	tipSinks.Unlock()
	defer func() {
		tipSinks.Lock()
		delete(tipSinks.m, p)
		tipSinks.Unlock()
	}()
	c := vgsvg.New(w, h)
	drawPlot(p, draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	svg := buf.String()
	if len(tips) > 0 {
		end := strings.LastIndex(svg, "</svg>")
		var g strings.Builder
		g.WriteString(`<g class="tips" fill="#000" fill-opacity="0" stroke="none">` + "\n")
		H := h.Points()
		for _, t := range tips {
			fmt.Fprintf(&g, `<circle cx="%.2f" cy="%.2f" r="6"><title>%s</title></circle>`+"\n", t.x, H-t.y, html.EscapeString(t.text))
		}
		g.WriteString("</g>\n")
		svg = svg[:end] + g.String() + svg[end:]
	}
	return os.WriteFile(path, []byte(svg), 0o644)
}

// recordTip is a collective point's hover text: what it is, its median and
// p95 time, its 95% interval, how many samples, and its bus bandwidth.
func recordTip(series string, r *results.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d ranks, %s", series, r.NP, results.FormatSize(r.Bytes))
	if r.Workload != "" {
		fmt.Fprintf(&b, " (%s)", r.Workload)
	}
	fmt.Fprintf(&b, "\nmedian %s µs", num(r.TimeUs))
	if r.TimeUsP95 > 0 {
		fmt.Fprintf(&b, ", p95 %s µs", num(r.TimeUsP95))
	}
	if r.TimeUsCILo > 0 && r.TimeUsCIHi > 0 {
		fmt.Fprintf(&b, "\n95%% CI of the median [%s, %s] µs", num(r.TimeUsCILo), num(r.TimeUsCIHi))
	}
	if n := len(r.SamplesUs); n > 0 {
		fmt.Fprintf(&b, "\n%d samples", n)
	} else if r.Iters > 0 {
		fmt.Fprintf(&b, "\n%d iterations", r.Iters)
	}
	if r.BusBWGBs > 0 && !math.IsInf(r.BusBWGBs, 0) {
		fmt.Fprintf(&b, ", busbw %s GB/s", num(r.BusBWGBs))
	}
	return b.String()
}

// svgName is the SVG beside a plot's PNG.
func svgName(dir, rel string) string {
	return filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(rel, ".png")+".svg"))
}
