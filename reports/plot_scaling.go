package reports

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/distbench/distbench/results"
)

// scalingSizes picks up to three message sizes measured at two or more world
// sizes: the smallest (latency-bound), the largest (bandwidth-bound) and one
// between. Sizes of the sweep come before a workload's, whose odd sizes
// would stand for a range they are not the steps of.
func scalingSizes(s *section) []int64 {
	var cand, replayed []int64
	for _, b := range s.sizes {
		n, work := 0, false
		for _, np := range s.nps {
			for _, name := range s.series {
				if s.at(name, np, b) != nil {
					n++
					break
				}
			}
			work = work || s.workloadAt(np, b) != ""
		}
		switch {
		case n < 2:
		case work:
			replayed = append(replayed, b)
		default:
			cand = append(cand, b)
		}
	}
	if len(cand) == 0 {
		cand = replayed
	}
	if len(cand) <= 3 {
		return cand
	}
	picked := []int64{cand[0], cand[len(cand)/2], cand[len(cand)-1]}
	return slices.Compact(picked)
}

// writeScaling draws bus bandwidth against world size at fixed message sizes:
// a strategy whose busbw holds as ranks are added scales; one whose busbw
// falls does not.
func (rp *report) writeScaling(s *section) error {
	sizes := scalingSizes(s)
	if len(sizes) == 0 {
		return nil
	}
	rp.m.h(3, "Bus bandwidth vs world size")
	for _, b := range sizes {
		p := newPlot(fmt.Sprintf("%s, %s: bus bandwidth by world size", s.title, results.FormatSize(b)),
			"world size (ranks)", "bus bandwidth (GB/s)")
		p.X.Tick.Marker = intTicks(s.nps)
		var ss []series
		t := &table{header: []string{"ranks"}}
		for i, name := range s.series {
			sr := series{name: name, color: rp.colors.of(s.base[name]), shape: i, dashed: s.peer[name]}
			for _, np := range s.nps {
				r := s.at(name, np, b)
				if r == nil {
					continue
				}
				sr.xy = append(sr.xy, plotter.XY{X: float64(np), Y: r.BusBWGBs})
				sr.tips = append(sr.tips, recordTip(name, r))
				lo, hi, ok := busbwCI(r)
				if !ok {
					lo, hi = r.BusBWGBs, r.BusBWGBs
				}
				sr.lo = append(sr.lo, r.BusBWGBs-lo)
				sr.hi = append(sr.hi, hi-r.BusBWGBs)
			}
			if len(sr.xy) > 0 {
				ss = append(ss, sr)
				t.header = append(t.header, name+" busbw (GB/s)")
			}
		}
		if err := addSeries(p, ss); err != nil {
			return err
		}
		entries := len(ss)
		if ref, ok := linkRate(s.key.link); ok && len(ss) > 0 {
			if err := addLinkRef(p, ref, float64(s.nps[0]), float64(s.nps[len(s.nps)-1])); err != nil {
				return err
			}
			entries++
		}
		p.Y.Min = 0
		// Room at both ends, so the first and last world sizes' markers and
		// error bars are not cut in half by the axes.
		if pad := 0.05 * (p.X.Max - p.X.Min); pad > 0 {
			p.X.Min, p.X.Max = p.X.Min-pad, p.X.Max+pad
		}
		rel, err := save(p, rp.dir, "scaling_"+s.slug+"_"+slug(results.FormatSize(b)), plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.h(4, results.FormatSize(b))
		rp.m.img(fmt.Sprintf("bus bandwidth vs world size, %s, %s", s.title, results.FormatSize(b)), rel)
		for _, np := range s.nps {
			row := []string{fmt.Sprint(np)}
			for _, sr := range ss {
				v := ""
				if r := s.at(sr.name, np, b); r != nil {
					v = num(r.BusBWGBs)
				}
				row = append(row, v)
			}
			t.add(row...)
		}
		if err := rp.m.table(t); err != nil {
			return err
		}
	}
	return nil
}
