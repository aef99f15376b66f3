package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/distbench/distbench/costmodel"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// Beyond this machine: what the calibrated cost model (costmodel) says the
// answer becomes at the scale users run at. The calibration is the run's
// own (calibration.json, from `distbench model calibrate`) where it has
// one, else fitted here from the run's allreduce points, the same fit
// calibrate makes. Its error is measured, not assumed: the model is fitted
// again without the largest world size and predicts it (or, with one world
// size, without every other size), and the held-out points' median
// |error| stands beside every prediction. Predictions are at clusterNPs
// ranks, one per host, on each of clusterLinks, at the sweep's allreduce
// sizes; the crossovers are the sizes where the predicted winner changes.

// clusterNPs are the world sizes predicted.
var clusterNPs = []int{64, 512, 4096}

// clusterLinks are the NICs predicted: a rate in bits per second and a
// one-way latency in seconds.
var clusterLinks = []struct {
	name          string
	rate, latency float64
}{
	{"10Gbit,5us", 10e9, 5e-6},
	{"100Gbit,2us", 100e9, 2e-6},
	{"400Gbit,1us", 400e9, 1e-6},
}

// clusterAlgos are the strategies the model predicts, where calibrated.
var clusterAlgos = []string{"ring", "tree", "ps"}

// unshaped is the shape of a sweep's links as the fit sees them: the
// unshaped loopback, no rate limit and no added latency; a shaped link's
// points are not used here.
func unshaped(link string) (float64, float64, error) {
	if link != "" {
		return 0, 0, fmt.Errorf("link %q: only unshaped points are fitted here", link)
	}
	return 0, 0, nil
}

// clusterModel is what the section says: the calibration, where it came
// from, its held-out error per algorithm, and the predictions.
type clusterModel struct {
	cal     *costmodel.Calibration
	given   bool
	heldout map[string]float64 // algo → median |error| %
	how     string             // how the error was measured
	algos   []string
	preds   map[string][]costmodel.Prediction // link → predictions
}

// fitCluster calibrates (or reads the calibration of) the run and predicts
// the cluster grid; nil when the run cannot calibrate the model.
func (rp *report) fitCluster() (*clusterModel, error) {
	cores := 0
	if rp.run.Env != nil {
		cores = rp.run.Env.Cores
	}
	var pts []costmodel.Point
	for _, p := range costmodel.Points(rp.run.Records, cores) {
		if p.Link == "" {
			pts = append(pts, p)
		}
	}
	cm := &clusterModel{preds: map[string][]costmodel.Prediction{}}
	cal, err := readCalibration(rp.dir)
	if err != nil {
		return nil, err
	}
	if cal != nil {
		cm.cal, cm.given = cal, true
	} else {
		if len(pts) == 0 {
			return nil, nil
		}
		fits, err := costmodel.FitAll(pts, unshaped, 1)
		if err != nil || len(fits) == 0 {
			return nil, nil // too few points to fit: no section, not a failed report
		}
		cm.cal = &costmodel.Calibration{Schema: 1, Fits: fits}
	}
	cm.algos = calibratedAlgos(cm.cal)
	if len(cm.algos) == 0 {
		return nil, nil
	}
	cm.heldout, cm.how = heldoutError(pts)
	var grid []int64
	for _, s := range collectiveSections(rp.run.Records) {
		if s.key.collective == "allreduce" && s.key.link == "" {
			for _, b := range s.sizes {
				if b >= 4 && !slices.Contains(grid, b) {
					grid = append(grid, b)
				}
			}
		}
	}
	slices.Sort(grid)
	if len(grid) == 0 {
		return nil, nil
	}
	for _, l := range clusterLinks {
		preds, err := cm.predict(l.rate, l.latency, grid)
		if err != nil {
			return nil, err
		}
		cm.preds[l.name] = preds
	}
	return cm, nil
}

// predict predicts cm's algorithms at clusterNPs ranks, one per host, on a
// NIC of rate bits/s and latency seconds, at sizes: each algorithm's
// software costs (α, κ, γ) as calibrated, the wire's as the NIC's, by the
// closed forms. The simulator would add a few percent of detail at a cost
// that grows with the ranks (a 4,096-rank ring takes seconds), and a
// report must be quick to make.
func (cm *clusterModel) predict(rate, latency float64, sizes []int64) ([]costmodel.Prediction, error) {
	link := costmodel.FromLink(rate, latency, 0, 0)
	var out []costmodel.Prediction
	for _, name := range cm.algos {
		a, err := costmodel.Lookup(name)
		if err != nil {
			return nil, err
		}
		for _, np := range clusterNPs {
			for _, b := range sizes {
				f, ok := cm.cal.Lookup(name, "")
				if !ok { // the tree is fitted as the algorithm it runs at this size
					f, ok = cm.cal.Lookup(a.Ran(np, b).Name, "")
				}
				if !ok {
					continue
				}
				p := link
				p.Alpha, p.Gamma, p.Kappa = f.Params.Alpha, f.Params.Gamma, f.Params.Kappa
				t := a.Closed(p, np, b)
				bus, _ := stats.BusBWFactor(a.Collective, np)
				out = append(out, costmodel.Prediction{Algo: name, NP: np, Bytes: b, Seconds: t, BusBW: stats.AlgBW(b, t) * bus,
					Method: costmodel.ByClosed, Extrapolated: true})
			}
		}
	}
	return out, nil
}

// calibratedAlgos are the clusterAlgos cal has an unshaped fit for (the
// tree's as the algorithms it runs).
func calibratedAlgos(cal *costmodel.Calibration) []string {
	var out []string
	for _, a := range clusterAlgos {
		for _, f := range cal.Fits {
			if f.Link == "" && (f.Algo == a || strings.HasPrefix(f.Algo, a+"/")) && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// heldoutError fits the model without the largest world size of pts and
// predicts it (with one world size, without every other size), and gives
// each algorithm's median |error| in percent (the tree's worse algorithm)
// and how it was measured.
func heldoutError(pts []costmodel.Point) (map[string]float64, string) {
	out := map[string]float64{}
	var nps []int
	var sizes []int64
	for _, p := range pts {
		if !slices.Contains(nps, p.NP) {
			nps = append(nps, p.NP)
		}
		if !slices.Contains(sizes, p.Bytes) {
			sizes = append(sizes, p.Bytes)
		}
	}
	if len(nps) == 0 {
		return out, ""
	}
	slices.Sort(nps)
	slices.Sort(sizes)
	train := func(p costmodel.Point) bool { return p.NP < nps[len(nps)-1] }
	how := fmt.Sprintf("fitted on the %s-rank points, predicting the %d-rank ones", joinAnd(intStrings(nps[:len(nps)-1])), nps[len(nps)-1])
	if len(nps) == 1 {
		train = func(p costmodel.Point) bool { return slices.Index(sizes, p.Bytes)%2 == 0 }
		how = "fitted on every other size, predicting the sizes between"
	}
	held, err := costmodel.Validate(pts, train, unshaped, 1)
	if err != nil {
		return out, how
	}
	for _, h := range held {
		a, _, _ := strings.Cut(h.Algo, "/")
		out[a] = math.Max(out[a], h.MedianPct)
	}
	return out, how
}

func intStrings(xs []int) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprint(x)
	}
	return out
}

// writeCluster writes the "Beyond this machine" section.
func (rp *report) writeCluster(cm *clusterModel) error {
	if cm == nil {
		return nil
	}
	rp.m.h(2, "Beyond this machine")
	src := "this run's allreduce points (fitted as `distbench model calibrate` fits them)"
	if cm.given {
		src = "the run's " + costmodel.CalibrationFile
	}
	var errs []string
	for _, a := range cm.algos {
		if e, ok := cm.heldout[a]; ok {
			errs = append(errs, fmt.Sprintf("%s %.0f%%", a, e))
		}
	}
	errText := "its held-out error could not be measured (too few points to fit without some)"
	if len(errs) > 0 {
		errText = fmt.Sprintf("its held-out median |error|, %s: %s", cm.how, strings.Join(errs, ", "))
	}
	rp.m.p("What the cost model predicts allreduce becomes at %s ranks, one per host, on %s NICs, at the sweep's sizes: "+
		"calibrated on %s; %s. Every prediction here reaches far beyond the world sizes measured: it is no better than that "+
		"error, and worse the further it reaches (docs/design/costmodel.md). Closed forms, each algorithm's software costs as calibrated, the wire's the NIC's.", joinAnd(intStrings(clusterNPs)), joinAnd(linkNames()), src, errText)
	for _, l := range clusterLinks {
		preds := cm.preds[l.name]
		rp.m.h(3, "On "+l.name+" NICs")
		if cross := crossovers(preds); len(cross) > 0 {
			rp.m.WriteString("- " + strings.Join(cross, "\n- ") + "\n\n")
		}
		t := &table{header: []string{"ranks", "size"}}
		for _, a := range cm.algos {
			t.header = append(t.header, a+" (µs)")
		}
		t.header = append(t.header, "fastest", "by")
		win := map[[2]int64]costmodel.Winner{}
		for _, w := range costmodel.Winners(preds) {
			win[[2]int64{int64(w.NP), w.Bytes}] = w
		}
		for _, np := range clusterNPs {
			for _, b := range sizesOf(preds) {
				row := []string{fmt.Sprint(np), results.FormatSize(b)}
				for _, a := range cm.algos {
					v := ""
					for _, p := range preds {
						if p.Algo == a && p.NP == np && p.Bytes == b {
							v = num(p.Seconds * 1e6)
						}
					}
					row = append(row, v)
				}
				w := win[[2]int64{int64(np), b}]
				row = append(row, w.Algo, pct(w.Margin))
				t.add(row...)
			}
		}
		if err := rp.m.table(t); err != nil {
			return err
		}
	}
	return nil
}

func linkNames() []string {
	var out []string
	for _, l := range clusterLinks {
		out = append(out, l.name)
	}
	return out
}

func sizesOf(preds []costmodel.Prediction) []int64 {
	var out []int64
	for _, p := range preds {
		if !slices.Contains(out, p.Bytes) {
			out = append(out, p.Bytes)
		}
	}
	slices.Sort(out)
	return out
}

// crossovers says, per world size, which algorithm is predicted fastest
// over which sizes: "64 ranks: tree up to 64KiB, ring from 256KiB".
func crossovers(preds []costmodel.Prediction) []string {
	ws := costmodel.Winners(preds)
	var out []string
	for _, np := range clusterNPs {
		var runs []string
		var cur string
		var from, to int64
		flush := func() {
			if cur != "" {
				runs = append(runs, fmt.Sprintf("%s at %s", cur, sizeRange(from, to)))
			}
		}
		for _, w := range ws {
			if w.NP != np {
				continue
			}
			if w.Algo != cur {
				flush()
				cur, from = w.Algo, w.Bytes
			}
			to = w.Bytes
		}
		flush()
		if len(runs) == 0 {
			continue
		}
		line := fmt.Sprintf("%d ranks: %s fastest", np, strings.Join(runs, ", "))
		if len(runs) == 1 {
			line = fmt.Sprintf("%d ranks: %s fastest at every size", np, strings.TrimSuffix(runs[0][:strings.Index(runs[0], " at ")], ""))
		} else {
			line += " (crossovers between the sizes where the fastest changes)"
		}
		out = append(out, line)
	}
	return out
}

// headline is the section's sentence for the headline: the predicted
// fastest allreduce at the largest world size on the middle link, with
// the model's error beside it; "" without a model.
func (cm *clusterModel) headline() string {
	if cm == nil {
		return ""
	}
	l := clusterLinks[len(clusterLinks)/2]
	var line string
	for _, c := range crossovers(cm.preds[l.name]) {
		if strings.HasPrefix(c, fmt.Sprint(clusterNPs[len(clusterNPs)-1])+" ranks:") {
			line = c
		}
	}
	if line == "" {
		return ""
	}
	line = strings.TrimSuffix(line, " (crossovers between the sizes where the fastest changes)")
	var errs []string
	for _, a := range cm.algos {
		if e, ok := cm.heldout[a]; ok {
			errs = append(errs, fmt.Sprintf("%s %.0f%%", a, e))
		}
	}
	note := "its error not measured"
	if len(errs) > 0 {
		note = "held-out median |error| " + strings.Join(errs, ", ")
	}
	return fmt.Sprintf("**[Beyond this machine](#beyond-this-machine)**, as the cost model predicts it on %s NICs (%s): %s.", l.name, note, line)
}
