package reports

import (
	"fmt"

	"gonum.org/v1/plot"

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
		ss, cols := rp.sizeSeries(s, np, func(r *results.Record) (y, down, up float64) {
			if r.TimeUsCILo > 0 && r.TimeUsCIHi > 0 {
				return r.TimeUs, r.TimeUs - r.TimeUsCILo, r.TimeUsCIHi - r.TimeUs
			}
			return r.TimeUs, 0, 0
		})
		t := &table{header: []string{"size"}}
		for _, name := range cols {
			t.header = append(t.header, name+" time (µs)", name+" p95 (µs)")
		}
		if len(ss) == 0 {
			continue
		}
		if err := addSeries(p, ss); err != nil {
			return err
		}
		if err := annotateSizes(p, ss); err != nil {
			return err
		}
		rel, err := save(p, rp.dir, "latency_"+s.slug+fmt.Sprintf("_np%d", np), plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.h(4, fmt.Sprintf("%d ranks", np))
		rp.m.img(fmt.Sprintf("time vs size, %s, %d ranks", s.title, np), rel)
		for _, b := range s.sizes {
			row := []string{s.sizeLabel(np, b)}
			any := false
			for _, name := range cols {
				v, p95 := "", ""
				if r := s.at(name, np, b); r != nil {
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
