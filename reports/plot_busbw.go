package reports

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"

	"github.com/distbench/distbench/results"
)

// busbwCI returns the busbw bounds that correspond to the time's confidence
// interval (a longer time is a lower bandwidth), and whether there is one.
func busbwCI(r *results.Record) (lo, hi float64, ok bool) {
	if r.TimeUsCILo <= 0 || r.TimeUsCIHi <= 0 || r.BusBWGBs <= 0 {
		return 0, 0, false
	}
	// busbw ∝ 1/time, with the factor the record was written with.
	k := r.BusBWGBs * r.TimeUs
	return k / r.TimeUsCIHi, k / r.TimeUsCILo, true
}

// busbwPlot is what a plot of bus bandwidth against size is drawn from.
type busbwPlot struct {
	ss   []series
	cols []string // the section's series with points, the table's columns
	ref  *linkRef // the link's rate, on a shaped section
}

// busbwData gathers the busbw plot of s at world size np: a line per
// strategy and peer, a workload's points as markers of their own, and the
// link's rate where s's points were shaped.
func (rp *report) busbwData(s *section, np int) busbwPlot {
	ss, cols := rp.sizeSeries(s, np, func(r *results.Record) (y, down, up float64) {
		lo, hi, ok := busbwCI(r)
		if !ok {
			return r.BusBWGBs, 0, 0
		}
		return r.BusBWGBs, r.BusBWGBs - lo, hi - r.BusBWGBs
	})
	d := busbwPlot{ss: ss, cols: cols}
	if ref, ok := linkRate(s.key.link); ok {
		d.ref = &ref
	}
	return d
}

// writeBusBW draws, for each world size, bus bandwidth against message size
// with a line per strategy and peer, and tabulates the same numbers.
func (rp *report) writeBusBW(s *section) error {
	rp.m.h(3, "Bus bandwidth vs message size")
	rp.m.p("busbw = algbw × %s, as nccl-tests defines it; error bars are the 95%% confidence interval of the median time.", busbwFactorText(s.key.collective))
	if ws := s.workloads(); len(ws) > 0 {
		rp.m.p("Diamonds are sizes a workload replays (%s), not steps of the sweep: they stand apart from the lines.", strings.Join(ws, ", "))
	}
	if ref, ok := linkRate(s.key.link); ok {
		rp.m.p("The dashed grey line is the shaped link's rate, %s: what a rank's NIC carries at most, each way.",
			strings.TrimPrefix(ref.label, "link "))
	}
	for _, np := range s.nps {
		d := rp.busbwData(s, np)
		if len(d.ss) == 0 {
			continue
		}
		p := newPlot(fmt.Sprintf("%s, %d ranks: bus bandwidth", s.title, np),
			"message size (bytes, log₂ scale)", "bus bandwidth (GB/s)")
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks{}
		var extra []float64
		if d.ref != nil {
			extra = append(extra, d.ref.gbs)
		}
		logYIfDecades(p, d.ss, extra...)
		if err := addSeries(p, d.ss); err != nil {
			return err
		}
		if err := annotateSizes(p, d.ss); err != nil {
			return err
		}
		entries := len(d.ss)
		if d.ref != nil {
			xlo, xhi, _ := xRange(d.ss)
			if err := addLinkRef(p, *d.ref, xlo, xhi); err != nil {
				return err
			}
			entries++
		}
		rel, err := save(p, rp.dir, "busbw_"+s.slug+fmt.Sprintf("_np%d", np), plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.h(4, fmt.Sprintf("%d ranks", np))
		rp.m.img(fmt.Sprintf("bus bandwidth vs size, %s, %d ranks", s.title, np), rel)
		t := &table{header: []string{"size"}}
		for _, name := range d.cols {
			t.header = append(t.header, name+" busbw (GB/s)")
		}
		for _, b := range s.sizes {
			row := []string{s.sizeLabel(np, b)}
			any := false
			for _, name := range d.cols {
				v := ""
				if r := s.at(name, np, b); r != nil {
					v = num(r.BusBWGBs)
					if lo, hi, ok := busbwCI(r); ok {
						v += fmt.Sprintf(" [%s, %s]", num(lo), num(hi))
					}
					any = true
				}
				row = append(row, v)
			}
			if any {
				t.add(row...)
			}
		}
		if err := rp.m.table(t); err != nil {
			return err
		}
	}
	return nil
}

func busbwFactorText(collective string) string {
	switch collective {
	case "allreduce":
		return "2(n−1)/n"
	case "allgather", "reducescatter", "alltoall":
		return "(n−1)/n"
	}
	return "1"
}

// logYIfDecades puts the y axis on a log scale when the series' positive
// values span a decade or more: busbw from 4 KiB to 64 MiB spans three, and
// on a linear axis every small size sits flat at zero. Error bars are cut
// to stay above zero, where a log axis ends, and points at zero are left
// out (the table beside the plot still lists them). extra are values drawn
// besides the series (a reference line) that the axis must show too.
func logYIfDecades(p *plot.Plot, ss []series, extra ...float64) {
	lo, hi := math.Inf(1), 0.0
	for _, y := range extra {
		if y > 0 {
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
	}
	for _, sr := range ss {
		for _, xy := range sr.xy {
			if xy.Y > 0 {
				lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
			}
		}
	}
	if hi <= 0 || hi/lo < 10 {
		return
	}
	for k := range ss {
		sr := &ss[k]
		xy, los, his := sr.xy[:0], sr.lo[:0], sr.hi[:0]
		var tips []string
		for i, v := range sr.xy {
			if v.Y <= 0 {
				continue // no place on a log axis
			}
			xy = append(xy, v)
			if i < len(sr.tips) {
				tips = append(tips, sr.tips[i])
			}
			if i < len(sr.lo) {
				los, his = append(los, math.Min(sr.lo[i], 0.9*v.Y)), append(his, sr.hi[i])
			}
		}
		sr.xy, sr.lo, sr.hi = xy, los, his
		if sr.tips != nil {
			sr.tips = tips
		}
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Y.Label.Text += ", log scale"
}
