package reports

import (
	"fmt"

	"gonum.org/v1/plot"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// wireSent is the mean bytes a rank (or dedicated server) sent per
// operation, and whether r has wire bytes.
func wireSent(r *results.Record) (float64, bool) {
	if !r.HasWire() {
		return 0, false
	}
	sum, n := 0.0, 0
	for _, v := range [][]float64{r.WireSentBytes, r.WireServerSentBytes} {
		for _, b := range v {
			sum += b
			n++
		}
	}
	return sum / float64(n), true
}

// writeWire draws, for each world size, the bytes the busiest rank really
// moved per operation against message size, a line per strategy, beside
// the bytes busbw's formula assumes, and tabulates them with the bytes
// each rank sent on average. The busiest rank is drawn because it bounds
// the time, and because the mean hides what matters: a tree's or a
// parameter server's mean is the ring's, its busiest rank's is not. The
// plot's y is bytes per byte of message: on it a ring is flat at busbw's
// factor and what sends more stands off the line, where absolute bytes on
// log axes would draw every strategy as the same slope.
func (rp *report) writeWire(s *section) error {
	hasWire := false
	for _, r := range s.pts {
		hasWire = hasWire || r.HasWire()
	}
	if !hasWire {
		return nil // peers and older results do not count bytes
	}
	rp.m.h(3, "Bytes on the wire vs message size")
	rp.m.p("What each rank really sent per operation (payload bytes, measured by the transports and a parameter server's gRPC streams), " +
		"beside what busbw's formula assumes every rank sends. The busiest figure is the most that any rank or dedicated server " +
		"sent or received: on full-duplex links it bounds the time, time ≥ busiest / link rate. The plots draw it; the tables add each rank's mean.")
	for _, np := range s.nps {
		ss, cols := rp.sizeSeries(s, np, func(r *results.Record) (y, down, up float64) {
			return r.WireBusiestBytes / float64(r.Bytes), 0, 0
		})
		// Only the series that count bytes: a peer's line at zero says nothing.
		var wired []series
		var wiredCols []string
		for _, sr := range ss {
			keep := false
			for _, xy := range sr.xy {
				keep = keep || xy.Y > 0
			}
			if keep {
				wired = append(wired, sr)
			}
		}
		for _, name := range cols {
			for _, b := range s.sizes {
				if r := s.at(name, np, b); r != nil && r.HasWire() {
					wiredCols = append(wiredCols, name)
					break
				}
			}
		}
		if len(wired) == 0 {
			continue
		}
		factor, err := stats.BusBWFactor(s.key.collective, np)
		if err != nil {
			return err
		}
		p := newPlot(fmt.Sprintf("%s, %d ranks: bytes of the busiest rank", s.title, np),
			"message size (bytes, log₂ scale)", "busiest rank's bytes ÷ message size")
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks{}
		logYIfDecades(p, wired, factor)
		if err := addSeries(p, wired); err != nil {
			return err
		}
		xlo, xhi, _ := xRange(wired)
		// The formula's factor, drawn as a link's rate is on the busbw plot.
		ref := linkRef{gbs: factor, label: fmt.Sprintf("busbw assumes %s = %s", busbwFactorText(s.key.collective), num(factor))}
		if err := addLinkRef(p, ref, xlo, xhi); err != nil {
			return err
		}
		rel, err := save(p, rp.dir, "wire_"+s.slug+fmt.Sprintf("_np%d", np), plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.h(4, fmt.Sprintf("%d ranks", np))
		rp.m.img(fmt.Sprintf("busiest rank's bytes vs size, %s, %d ranks", s.title, np), rel)
		t := &table{header: []string{"size", "busbw assumes (B)"}}
		for _, name := range wiredCols {
			t.header = append(t.header, name+" sent/rank (B)", name+" busiest (B)")
		}
		for _, b := range s.sizes {
			row := []string{s.sizeLabel(np, b), num(factor * float64(b))}
			any := false
			for _, name := range wiredCols {
				v, busiest := "", ""
				if r := s.at(name, np, b); r != nil {
					if sent, ok := wireSent(r); ok {
						v, busiest = num(sent), num(r.WireBusiestBytes)
						any = true
					}
				}
				row = append(row, v, busiest)
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
