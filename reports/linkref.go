package reports

import (
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/distbench/distbench/internal/linkspec"
)

// linkRef is a shaped link's rate as a bus bandwidth plot draws it: a
// horizontal line that shows how close a strategy gets to the wire.
type linkRef struct {
	gbs   float64 // the rate in GB/s (1e9 bytes), busbw's unit
	label string  // "link 1 Gbit/s = 0.125 GB/s"
}

// linkRate reads a record's link ("1Gbit,25us", "10g") as the transport
// does. An unshaped link, one that shapes latency alone ("unlimited,5ms")
// and one that does not parse have no rate to draw. A link with per-rank
// overrides ("10g;rank3=1Gbit") draws the slowest rate any rank has, which
// bounds a collective that every rank takes part in.
func linkRate(link string) (linkRef, bool) {
	if link == "" {
		return linkRef{}, false
	}
	rl, err := linkspec.ParseRankLinks(link)
	if err != nil {
		return linkRef{}, false
	}
	l := rl.Default
	for _, o := range rl.Ranks {
		if o.Rate > 0 && (l.Rate <= 0 || o.Rate < l.Rate) {
			l = o
		}
	}
	if l.Rate <= 0 {
		return linkRef{}, false
	}
	rate := strconv.FormatInt(l.Rate, 10) + " bit/s"
	for _, u := range []struct {
		name  string
		scale float64
	}{{"Tbit/s", 1e12}, {"Gbit/s", 1e9}, {"Mbit/s", 1e6}, {"kbit/s", 1e3}} {
		if float64(l.Rate) >= u.scale {
			rate = strconv.FormatFloat(float64(l.Rate)/u.scale, 'g', 4, 64) + " " + u.name
			break
		}
	}
	gbs := float64(l.Rate) / 8 / 1e9
	return linkRef{gbs: gbs, label: "link " + rate + " = " + strconv.FormatFloat(gbs, 'g', 4, 64) + " GB/s"}, true
}

// addLinkRef draws ref across p's x range from xlo to xhi, dashed grey, and
// names it in the legend.
func addLinkRef(p *plot.Plot, ref linkRef, xlo, xhi float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: ref.gbs}, {X: xhi, Y: ref.gbs}})
	if err != nil {
		return err
	}
	l.Color = color.Gray{Y: 90}
	l.Width = vg.Points(1.25)
	l.Dashes = []vg.Length{vg.Points(7), vg.Points(4)}
	p.Add(l)
	p.Legend.Add(ref.label, l)
	return nil
}

// xRange is the smallest and largest x of ss.
func xRange(ss []series) (lo, hi float64, ok bool) {
	for _, s := range ss {
		for _, xy := range s.xy {
			if !ok || xy.X < lo {
				lo = xy.X
			}
			if !ok || xy.X > hi {
				hi = xy.X
			}
			ok = true
		}
	}
	return lo, hi, ok
}
