package reports

import (
	"fmt"

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
	// Ranks are categories, not a scale: markers only, each point's a
	// little apart from the others' at the same rank so none hides another.
	for i, pt := range pts {
		s := series{name: pt.label(), color: palette[i%len(palette)], shape: i, marksOnly: true}
		off := 0.3 * (float64(i) - float64(len(pts)-1)/2) / float64(max(len(pts), 1))
		for rank, med := range pt.r.RankMedianUs {
			if med > 0 {
				s.xy = append(s.xy, plotter.XY{X: float64(rank) + off, Y: med})
				host := ""
				if rank < len(pt.r.RankHosts) {
					host = " on " + pt.r.RankHosts[rank]
				}
				s.tips = append(s.tips, fmt.Sprintf("%s\nrank %d%s: median %s µs", pt.label(), rank, host, num(med)))
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
	p.X.Min, p.X.Max = -0.5, float64(len(ranks))-0.5
	rel, err := save(p, rp.dir, "ranks", plotW, plotH)
	if err != nil {
		return err
	}
	rp.m.img("median time per rank", rel)
	return nil
}
