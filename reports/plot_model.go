package reports

import (
	cmpo "cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/distbench/distbench/costmodel"
	"github.com/distbench/distbench/results"
)

// PredictionPlot draws predicted time and bus bandwidth against size, one
// line per algorithm and world size, to path (PNG), time above, bus
// bandwidth below; extrapolations are dashed.
func PredictionPlot(path, link string, preds []costmodel.Prediction) error {
	type key struct {
		algo string
		np   int
	}
	bySeries := map[key][]costmodel.Prediction{}
	var keys []key
	var algos []string
	for _, p := range preds {
		k := key{p.Algo, p.NP}
		if bySeries[k] == nil {
			keys = append(keys, k)
			algos = append(algos, p.Algo)
		}
		bySeries[k] = append(bySeries[k], p)
	}
	slices.Sort(algos)
	cols := newColors(slices.Compact(algos))
	var plots []*plot.Plot
	for _, y := range []struct {
		label string
		log   bool
		of    func(costmodel.Prediction) float64
	}{
		{"time (us)", true, func(p costmodel.Prediction) float64 { return p.Seconds * 1e6 }},
		{"bus bandwidth (GB/s)", false, func(p costmodel.Prediction) float64 { return p.BusBW }},
	} {
		p := newPlot("predicted allreduce, "+link+" NICs: "+y.label, "size", y.label)
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
		if y.log {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
		}
		var ss []series
		nps := map[int]int{}
		for _, k := range keys {
			if _, ok := nps[k.np]; !ok {
				nps[k.np] = len(nps)
			}
			s := series{name: fmt.Sprintf("%s np=%d", k.algo, k.np), color: cols.of(k.algo), shape: nps[k.np]}
			pts := bySeries[k]
			slices.SortFunc(pts, func(a, b costmodel.Prediction) int { return cmpo.Compare(a.Bytes, b.Bytes) })
			for _, pr := range pts {
				s.xy = append(s.xy, plotter.XY{X: float64(pr.Bytes), Y: y.of(pr)})
				s.dashed = s.dashed || pr.Extrapolated
			}
			ss = append(ss, s)
		}
		if err := addSeries(p, ss); err != nil {
			return err
		}
		padRange(&p.X, true)
		padRange(&p.Y, y.log)
		plots = append(plots, p)
	}
	img := vgimg.New(8*vg.Inch, 10*vg.Inch)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(10)}
	cv := plot.Align([][]*plot.Plot{{plots[0]}, {plots[1]}}, tiles, draw.New(img))
	plots[0].Draw(cv[0][0])
	plots[1].Draw(cv[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return f.Close()
}

// readCalibration reads dir's calibration, nil when it has none.
func readCalibration(dir string) (*costmodel.Calibration, error) {
	c, err := costmodel.ReadCalibration(filepath.Join(dir, costmodel.CalibrationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return c, err
}

// writeModel overlays the calibrated model on the measurements, where the
// run has a calibration: a table of measured and predicted times per point
// and, per link, a plot of both against size.
func (rp *report) writeModel() error {
	cal, err := readCalibration(rp.dir)
	if err != nil || cal == nil {
		return err
	}
	cores := 0
	if rp.run.Env != nil {
		cores = rp.run.Env.Cores
	}
	pts := costmodel.Points(rp.run.Records, cores)
	rp.m.h(2, "Model and measurement")
	rp.m.p("Predictions of the calibrated model (%s; `distbench model calibrate`, docs/design/costmodel.md) beside the measured medians.", costmodel.CalibrationFile)
	t := &table{header: []string{"link", "algo", "np", "size", "measured (us)", "predicted (us)", "error %"}, left: map[int]bool{1: true}}
	type key struct {
		link, algo string
		np         int
	}
	meas, pred := map[key]plotter.XYs{}, map[key]plotter.XYs{}
	var keys []key
	for _, pt := range pts {
		f, ok := cal.Lookup(pt.Algo, pt.Link)
		if !ok {
			continue
		}
		a, err := costmodel.Lookup(pt.Algo)
		if err != nil {
			continue
		}
		y, _, err := a.Predict(pt.Topology(f.Params), pt.NP, pt.Bytes)
		if err != nil {
			return err
		}
		m := pt.Time()
		t.add(pt.Link, pt.Algo, fmt.Sprint(pt.NP), results.FormatSize(pt.Bytes), fmt.Sprintf("%.1f", m*1e6), fmt.Sprintf("%.1f", y*1e6), fmt.Sprintf("%+.1f", 100*(y-m)/m))
		k := key{pt.Link, pt.Algo, pt.NP}
		if meas[k] == nil {
			keys = append(keys, k)
		}
		meas[k] = append(meas[k], plotter.XY{X: float64(pt.Bytes), Y: m * 1e6})
		pred[k] = append(pred[k], plotter.XY{X: float64(pt.Bytes), Y: y * 1e6})
	}
	if len(t.rows) == 0 {
		rp.m.p("The calibration has no fit for this run's points.")
		return nil
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmpo.Or(cmpo.Compare(a.link, b.link), cmpo.Compare(a.algo, b.algo), cmpo.Compare(a.np, b.np))
	})
	// Plot the smallest and largest world size of each algorithm: all of
	// them would bury the lines under the legend; the table has every one.
	lo, hi := map[[2]string]int{}, map[[2]string]int{}
	for _, k := range keys {
		a := [2]string{k.link, k.algo}
		if v, ok := lo[a]; !ok || k.np < v {
			lo[a] = k.np
		}
		hi[a] = max(hi[a], k.np)
	}
	keys = slices.DeleteFunc(keys, func(k key) bool {
		a := [2]string{k.link, k.algo}
		return k.np != lo[a] && k.np != hi[a]
	})
	for i := 0; i < len(keys); {
		link := keys[i].link
		p := newPlot("model (dashed) and measurement (marks), "+linkTitle(link), "size", "time (us)")
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
		var ss []series
		for ; i < len(keys) && keys[i].link == link; i++ {
			k := keys[i]
			name := fmt.Sprintf("%s np=%d", k.algo, k.np)
			col := rp.colors.of(k.algo)
			ss = append(ss, series{name: name, color: col, shape: k.np, xy: meas[k], marksOnly: true},
				series{name: name + " model", color: col, shape: k.np, xy: pred[k], dashed: true})
		}
		if err := addSeries(p, ss); err != nil {
			return err
		}
		rel, err := save(p, rp.dir, slug("model", link), 8*vg.Inch, 6*vg.Inch)
		if err != nil {
			return err
		}
		rp.m.img("model and measurement, "+linkTitle(link), rel)
	}
	return rp.m.table(t)
}

func linkTitle(link string) string {
	if link == "" {
		return "unshaped"
	}
	return link
}
