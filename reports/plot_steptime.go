package reports

import (
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// stepSplit is the mean make-up of a training step.
type stepSplit struct {
	compute, comm, exposedMs float64 // ms, as recorded
}

// exposed is the communication the step waits for.
func (s stepSplit) exposed() float64 { return s.exposedMs }

// overlapped is the communication hidden under computation.
func (s stepSplit) overlapped() float64 { return max(s.comm-s.exposedMs, 0) }

// computeOnly is computation with no communication running beside it.
func (s stepSplit) computeOnly() float64 { return max(s.compute-s.overlapped(), 0) }

// step is the time a step costs: computation plus the communication it waits
// for.
func (s stepSplit) step() float64 { return s.compute + s.exposedMs }

// writeStepTime draws where each strategy's step time goes, as stacked bars.
// A bar's height is the step time, compute + exposed comm. Communication that
// overlaps computation costs no extra time, so it is drawn as the part of the
// compute bar it runs under, not on top of it: stacking compute, exposed and
// overlapped comm would overstate the step by the overlapped part.
func (rp *report) writeStepTime(g *trainGroup) error {
	var names []string
	var splits []stepSplit
	for _, name := range g.series {
		var s stepSplit
		n := 0
		for _, r := range g.steps[name] {
			if r.ComputeMs == 0 && r.CommMs == 0 {
				continue
			}
			s.compute += r.ComputeMs
			s.comm += r.CommMs
			s.exposedMs += r.ExposedMs
			n++
		}
		if n == 0 {
			continue
		}
		s.compute /= float64(n)
		s.comm /= float64(n)
		s.exposedMs /= float64(n)
		names = append(names, name)
		splits = append(splits, s)
	}
	if len(names) == 0 {
		return nil
	}
	rp.m.h(4, "Step time: compute and communication")
	rp.m.text("Mean per step. Bar height = compute + exposed communication = step time; the overlapped part of communication " +
		"(comm − exposed) runs under computation and is drawn inside the compute bar.")
	p := plotNoGrid(g.title+": where a step's time goes", "strategy", "time per step (ms)")
	p.Legend.Left = false
	parts := []struct {
		name string
		col  color.RGBA
		v    func(stepSplit) float64
	}{
		{"compute alone", color.RGBA{148, 103, 189, 255}, stepSplit.computeOnly},
		{"comm overlapped with compute", color.RGBA{23, 190, 207, 255}, stepSplit.overlapped},
		{"exposed comm", color.RGBA{214, 39, 40, 255}, stepSplit.exposed},
	}
	var below *plotter.BarChart
	top := 0.0
	for _, pt := range parts {
		vals := make(plotter.Values, len(splits))
		for i, s := range splits {
			vals[i] = pt.v(s)
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(36))
		if err != nil {
			return err
		}
		bars.Color = pt.col
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		p.Legend.Add(pt.name, bars)
	}
	for _, s := range splits {
		top = max(top, s.step())
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min, p.Y.Max = 0, top*1.35 // headroom for the legend
	rel, err := save(p, rp.dir, "steptime_"+g.slug, plotW, plotH)
	if err != nil {
		return err
	}
	rp.m.img(g.title+": step time split", rel)
	t := &table{header: []string{"series", "compute (ms)", "comm (ms)", "exposed comm (ms)", "overlapped comm (ms)", "comm hidden", "step (ms)"}}
	for i, s := range splits {
		hidden := "—"
		if s.comm > 0 {
			hidden = num(100*s.overlapped()/s.comm) + "%"
		}
		t.add(names[i], num(s.compute), num(s.comm), num(s.exposed()), num(s.overlapped()), hidden, num(s.step()))
	}
	return rp.m.table(t)
}
