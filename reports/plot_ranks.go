package reports

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// plotRanks draws each rank's median time for pts, one line per point,
// against the rank, on a log time axis: the slow rank is the peak.
func (rp *report) plotRanks(pts []rankPoint) error {
	p := newPlot("median time per rank", "rank", "the rank's median time (µs, log scale)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	var ranks intTicks
	var ss []series
	for i, pt := range pts {
		s := series{name: pt.label(), color: palette[i%len(palette)], shape: i}
		for rank, med := range pt.r.RankMedianUs {
			if med > 0 {
				s.xy = append(s.xy, plotter.XY{X: float64(rank), Y: med})
			}
			if len(ranks) <= rank {
				ranks = append(ranks, rank)
			}
		}
		ss = append(ss, s)
	}
	p.X.Tick.Marker = ranks
	if err := addSeries(p, ss); err != nil {
		return err
	}
	p.X.Min, p.X.Max = -0.25, float64(len(ranks))-0.75
	legendRoom(p, len(ss))
	rel, err := save(p, rp.dir, "ranks", plotW, plotH)
	if err != nil {
		return err
	}
	rp.m.img("median time per rank", rel)
	return nil
}
