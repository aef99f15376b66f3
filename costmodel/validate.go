package costmodel

import (
	"math"
	"slices"
	"sort"

	"github.com/distbench/distbench/stats"
)

// Heldout is how well a calibration predicts points it was not fitted on,
// for one algorithm on one link: absolute percentage errors.
type Heldout struct {
	Algo, Link                    string
	Fit                           Fit // what predicted the held-out points
	N                             int
	MedianPct, GeomeanPct, MaxPct float64
	Errors                        []PointError
}

// PointError is one held-out point's prediction against its measurement.
type PointError struct {
	NP             int
	Bytes          int64
	Measured, Pred float64 // seconds
	ErrPct         float64 // signed, (pred − measured)/measured
}

// Validate fits on the points train accepts and predicts the others.
func Validate(pts []Point, train func(Point) bool, shape LinkShape, seed uint64) ([]Heldout, error) {
	var fitOn, held []Point
	for _, p := range pts {
		if train(p) {
			fitOn = append(fitOn, p)
		} else {
			held = append(held, p)
		}
	}
	fits, err := FitAll(fitOn, shape, seed)
	if err != nil {
		return nil, err
	}
	cal := &Calibration{Fits: fits}
	byKey := map[[2]string]*Heldout{}
	var out []*Heldout
	for _, p := range held {
		f, ok := cal.Lookup(p.Algo, p.Link)
		if !ok {
			continue
		}
		a, _ := Lookup(p.Algo)
		pred, _, err := a.Predict(p.Topology(f.Params), p.NP, p.Bytes)
		if err != nil {
			return nil, err
		}
		k := [2]string{p.Algo, p.Link}
		h := byKey[k]
		if h == nil {
			h = &Heldout{Algo: p.Algo, Link: p.Link, Fit: f}
			byKey[k] = h
			out = append(out, h)
		}
		m := p.Time()
		h.Errors = append(h.Errors, PointError{NP: p.NP, Bytes: p.Bytes, Measured: m, Pred: pred, ErrPct: 100 * (pred - m) / m})
	}
	res := make([]Heldout, 0, len(out))
	for _, h := range out {
		var abs []float64
		logSum := 0.0
		for _, e := range h.Errors {
			a := math.Abs(e.ErrPct)
			abs = append(abs, a)
			logSum += math.Log(math.Max(a, 0.01))
		}
		slices.Sort(abs)
		h.N = len(abs)
		h.MedianPct = stats.Median(abs)
		h.GeomeanPct = math.Exp(logSum / float64(len(abs)))
		h.MaxPct = abs[len(abs)-1]
		res = append(res, *h)
	}
	sort.Slice(res, func(i, j int) bool {
		return res[i].Link < res[j].Link || res[i].Link == res[j].Link && res[i].Algo < res[j].Algo
	})
	return res, nil
}
