package reports

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/distbench/distbench/results"
)

// writeLatency draws, for each world size, the median time against message
// size on log-log axes, where both the latency floor of small messages and
// the bandwidth slope of large ones are visible at once.
func (rp *report) writeLatency(s *section) error {
	rp.m.h(3, "Time vs message size")
	rp.m.text("Median time per operation of the slowest rank; error bars and brackets are the 95% confidence interval of the median, p95 the 95th percentile.")
	for _, np := range s.nps {
		p := newPlot(fmt.Sprintf("%s, %d ranks: time per operation", s.title, np),
			"message size (bytes, log₂ scale)", "median time (µs, log scale)")
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks{}
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		var ss []series
		t := &table{header: []string{"size"}}
		for i, name := range s.series {
			sr := series{name: name, color: rp.colors.of(s.base[name]), shape: i, dashed: s.peer[name]}
			for _, b := range s.sizes {
				r := s.at(name, np, b)
				if r == nil || b <= 0 {
					continue
				}
				sr.xy = append(sr.xy, plotter.XY{X: float64(b), Y: r.TimeUs})
				lo, hi := r.TimeUs, r.TimeUs
				if r.TimeUsCILo > 0 && r.TimeUsCIHi > 0 {
					lo, hi = r.TimeUsCILo, r.TimeUsCIHi
				}
				sr.lo = append(sr.lo, r.TimeUs-lo)
				sr.hi = append(sr.hi, hi-r.TimeUs)
			}
			if len(sr.xy) > 0 {
				ss = append(ss, sr)
				t.header = append(t.header, name+" time (µs)", name+" p95 (µs)")
			}
		}
		if len(ss) == 0 {
			continue
		}
		if err := addSeries(p, ss); err != nil {
			return err
		}
		legendRoom(p, len(ss))
		rel, err := save(p, rp.dir, "latency_"+s.slug+fmt.Sprintf("_np%d", np), plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.h(4, fmt.Sprintf("%d ranks", np))
		rp.m.img(fmt.Sprintf("time vs size, %s, %d ranks", s.title, np), rel)
		for _, b := range s.sizes {
			row := []string{results.FormatSize(b)}
			any := false
			for _, sr := range ss {
				v, p95 := "", ""
				if r := s.at(sr.name, np, b); r != nil {
					v = num(r.TimeUs)
					if r.TimeUsCILo > 0 && r.TimeUsCIHi > 0 {
						v += fmt.Sprintf(" [%s, %s]", num(r.TimeUsCILo), num(r.TimeUsCIHi))
					}
					if r.TimeUsP95 > 0 {
						p95 = num(r.TimeUsP95)
					}
					any = true
				}
				row = append(row, v, p95)
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
