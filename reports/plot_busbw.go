package reports

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

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

// writeBusBW draws, for each world size, bus bandwidth against message size
// with a line per strategy and peer, and tabulates the same numbers.
func (rp *report) writeBusBW(s *section) error {
	rp.m.h(3, "Bus bandwidth vs message size")
	rp.m.p("busbw = algbw × %s, as nccl-tests defines it; error bars are the 95%% confidence interval of the median time.", busbwFactorText(s.key.collective))
	for _, np := range s.nps {
		p := newPlot(fmt.Sprintf("%s, %d ranks: bus bandwidth", s.title, np),
			"message size (bytes, log₂ scale)", "bus bandwidth (GB/s)")
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks{}
		var ss []series
		t := &table{header: []string{"size"}}
		for i, name := range s.series {
			sr := series{name: name, color: rp.colors.of(s.base[name]), shape: i, dashed: s.peer[name]}
			hasCI := false
			for _, b := range s.sizes {
				if r := s.at(name, np, b); r != nil && b > 0 {
					if _, _, ok := busbwCI(r); ok {
						hasCI = true
					}
				}
			}
			for _, b := range s.sizes {
				r := s.at(name, np, b)
				if r == nil || b <= 0 {
					continue
				}
				sr.xy = append(sr.xy, plotter.XY{X: float64(b), Y: r.BusBWGBs})
				if hasCI {
					lo, hi, ok := busbwCI(r)
					if !ok {
						lo, hi = r.BusBWGBs, r.BusBWGBs
					}
					sr.lo = append(sr.lo, r.BusBWGBs-lo)
					sr.hi = append(sr.hi, hi-r.BusBWGBs)
				}
			}
			if len(sr.xy) > 0 {
				ss = append(ss, sr)
				t.header = append(t.header, name+" busbw (GB/s)")
			}
		}
		if len(ss) == 0 {
			continue
		}
		logYIfDecades(p, ss)
		if err := addSeries(p, ss); err != nil {
			return err
		}
		legendRoom(p, len(ss))
		rel, err := save(p, rp.dir, "busbw_"+s.slug+fmt.Sprintf("_np%d", np), plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.h(4, fmt.Sprintf("%d ranks", np))
		rp.m.img(fmt.Sprintf("bus bandwidth vs size, %s, %d ranks", s.title, np), rel)
		for _, b := range s.sizes {
			row := []string{results.FormatSize(b)}
			any := false
			for _, sr := range ss {
				v := ""
				if r := s.at(sr.name, np, b); r != nil {
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
// out (the table beside the plot still lists them).
func logYIfDecades(p *plot.Plot, ss []series) {
	lo, hi := math.Inf(1), 0.0
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
		for i, v := range sr.xy {
			if v.Y <= 0 {
				continue // no place on a log axis
			}
			xy = append(xy, v)
			if i < len(sr.lo) {
				los, his = append(los, math.Min(sr.lo[i], 0.9*v.Y)), append(his, sr.hi[i])
			}
		}
		sr.xy, sr.lo, sr.hi = xy, los, his
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Label.Text += ", log scale"
}
