package costmodel

import (
	"fmt"
	"math"
	"sort"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// Point is one measured (algorithm, link, np, size): its time per round.
type Point struct {
	Algo   string    `json:"algo"`
	Link   string    `json:"link"`
	NP     int       `json:"np"`
	Bytes  int64     `json:"bytes"`
	Rounds []float64 `json:"rounds_s"` // the median of each round, seconds
	Cores  int       `json:"cores"`    // of the machine that ran every rank
}

// Topology is how the point's sweep placed its ranks, at p: all on the
// one machine that ran it.
func (p Point) Topology(q Params) Topology { return OneHost(p.NP, p.Cores, q) }

// Time is the point's median over its rounds, in seconds.
func (p Point) Time() float64 { return stats.Median(p.Rounds) }

// Points gathers a sweep's allreduce (and broadcast) records into points, one per
// (algorithm, link, np, size), for the algorithms the model knows. A
// record is one round of a point (or the whole point, without rounds).
func Points(recs []results.Record, cores int) []Point {
	type key struct {
		algo, link string
		np         int
		bytes      int64
	}
	byKey := map[key]*Point{}
	var order []key
	for _, r := range recs {
		if r.Kind != results.KindCollective || r.Error != "" || r.Incomplete || r.Peer != "" || r.TimeUs <= 0 {
			continue
		}
		// The model is of messages over the network's sockets: shared
		// memory and device buffers have costs of their own.
		if results.TransportOf(&r) != "tcp" || r.Device != "" {
			continue
		}
		a, ok := ForRecord(r.Strategy, r.Options)
		if ok && r.Collective != a.Collective { // ring/broadcast, tree/broadcast
			a, ok = ForRecord(r.Strategy+"/"+r.Collective, nil)
			ok = ok && len(r.Options) == 0
		}
		if !ok || a.Collective != r.Collective {
			continue
		}
		a = a.Ran(r.NP, r.Bytes)
		k := key{a.Name, r.Link, r.NP, r.Bytes}
		p := byKey[k]
		if p == nil {
			p = &Point{Algo: a.Name, Link: r.Link, NP: r.NP, Bytes: r.Bytes, Cores: cores}
			byKey[k] = p
			order = append(order, k)
		}
		p.Rounds = append(p.Rounds, r.TimeUs*1e-6)
	}
	out := make([]Point, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// Fit is the calibrated parameters of one algorithm on one link.
type Fit struct {
	Algo   string `json:"algo"`
	Link   string `json:"link"`
	Params Params `json:"params"`
	// Lo and Hi bound each parameter: the 2.5th and 97.5th percentiles of
	// bootstrap refits, each drawing one round per point.
	Lo Params `json:"lo"`
	Hi Params `json:"hi"`
	// The range of the points fitted: predictions outside it extrapolate.
	NPMin    int   `json:"np_min"`
	NPMax    int   `json:"np_max"`
	BytesMin int64 `json:"bytes_min"`
	BytesMax int64 `json:"bytes_max"`
	Points   int   `json:"points"`
	// Median absolute relative error of the fit, in percent, over the
	// latency-bound points (α and latency above half the time) and the
	// bandwidth-bound ones; −1 where there are none.
	ErrLatencyPct   float64 `json:"err_latency_pct"`
	ErrBandwidthPct float64 `json:"err_bandwidth_pct"`
}

// Calibration is what `distbench model calibrate` writes.
type Calibration struct {
	Schema int      `json:"schema"`
	Runs   []string `json:"runs,omitempty"`
	Fits   []Fit    `json:"fits"`
}

// Lookup returns the fit for algo on link.
func (c *Calibration) Lookup(algo, link string) (Fit, bool) {
	for _, f := range c.Fits {
		if f.Algo == algo && f.Link == link {
			return f, true
		}
	}
	return Fit{}, false
}

// Extrapolates reports whether (np, bytes) lies outside what f was fitted on.
func (f Fit) Extrapolates(np int, bytes int64) bool {
	return np < f.NPMin || np > f.NPMax || bytes < f.BytesMin || bytes > f.BytesMax
}

// LinkShape is a link's rate in bits per second (0: unlimited) and
// latency in seconds, as the caller parses it (internal/transport).
type LinkShape func(link string) (rateBits, latency float64, err error)

// FitAll fits every (algorithm, link) in pts with at least 3 points, with
// one Crowd for them all (fitSeries): it is the host's.
func FitAll(pts []Point, shape LinkShape, seed uint64) ([]Fit, error) {
	type key struct{ algo, link string }
	groups := map[key][]Point{}
	var keys []key
	for _, p := range pts {
		k := key{p.Algo, p.Link}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].link < keys[j].link || keys[i].link == keys[j].link && keys[i].algo < keys[j].algo
	})
	var ss []series
	for _, k := range keys {
		if len(groups[k]) < 3 {
			continue
		}
		rate, lat, err := shape(k.link)
		if err != nil {
			return nil, err
		}
		ss = append(ss, series{algo: k.algo, link: k.link, pts: groups[k], rateBits: rate, latency: lat})
	}
	return fitSeries(ss, seed)
}

// FitPoints fits α, κ, γ and δ of algo on one link to pts by iteratively
// reweighted least squares on relative residuals (Huber weights, so a point
// hit by load on the machine pulls little), with the wire's β and latency
// fixed at the link's shape (what the shaper enforces; an unshaped link has
// no β and κ takes its bytes), and Crowd from these points alone, and
// bootstraps the fit over the points' rounds.
func FitPoints(algo, link string, pts []Point, rateBits, latency float64, seed uint64) (Fit, error) {
	fits, err := fitSeries([]series{{algo: algo, link: link, pts: pts, rateBits: rateBits, latency: latency}}, seed)
	if err != nil {
		return Fit{}, err
	}
	return fits[0], nil
}

// series is one (algorithm, link)'s points and the link's shape.
type series struct {
	algo, link        string
	pts               []Point
	rateBits, latency float64
}

// linear is a series fitted at one Crowd: its parameters, and the last
// linearisation (rows) and Huber weights, which the bootstrap refits.
type linear struct {
	p     Params
	fixed Params
	rows  []Terms
	ys, w []float64
	free  [nFit]bool
}

// fitAt fits s's α, κ, γ and δ with Crowd held at crowd.
func fitAt(s series, crowd float64) (linear, error) {
	a, err := Lookup(s.algo)
	if err != nil {
		return linear{}, err
	}
	pts := s.pts
	p := Params{Alpha: 20e-6, Latency: s.latency, Gamma: 0.5e-9, Kappa: 0.5e-9, Crowd: crowd}
	if s.rateBits > 0 {
		p.Beta = 8 / s.rateBits
	}
	l := linear{fixed: p, rows: make([]Terms, len(pts)), ys: make([]float64, len(pts)), w: make([]float64, len(pts))}
	for i, pt := range pts {
		l.ys[i] = pt.Time()
		l.w[i] = 1
	}
	// At one size (recursive doubling calibrated on every other size of a
	// sweep with two of its sizes) α and the per-byte costs are one number:
	// fit α and δ, not κ and γ, which would extrapolate the split to other
	// sizes at random.
	l.free = [nFit]bool{true, true, true, true}
	if sizes := distinctSizes(pts); sizes < 2 {
		l.free[1], l.free[2] = false, false
	}
	for iter := 0; iter < 8; iter++ {
		for i, pt := range pts {
			t, _, err := a.TermsAt(p, pt.NP, pt.Bytes, pt.Topology)
			if err != nil {
				return linear{}, fmt.Errorf("model: %s np %d %d B: %w", s.algo, pt.NP, pt.Bytes, err)
			}
			l.rows[i] = t
		}
		q := solve(l.rows, l.ys, l.w, l.fixed, l.free)
		// Huber weights on the relative residuals.
		res := make([]float64, len(pts))
		for i := range pts {
			res[i] = (l.rows[i].At(q) - l.ys[i]) / l.ys[i]
		}
		k := huberThreshold(res)
		for i, r := range res {
			l.w[i] = 1
			if math.Abs(r) > k {
				l.w[i] = k / math.Abs(r)
			}
		}
		p = q
	}
	l.p = p
	return l, nil
}

// fit is s's Fit at l's parameters, without the intervals.
func (s series) fit(l linear) Fit {
	f := Fit{Algo: s.algo, Link: s.link, Params: l.p, Points: len(s.pts), NPMin: math.MaxInt, BytesMin: math.MaxInt64}
	var lat, bw []float64
	for i, pt := range s.pts {
		f.NPMin, f.NPMax = min(f.NPMin, pt.NP), max(f.NPMax, pt.NP)
		f.BytesMin, f.BytesMax = min(f.BytesMin, pt.Bytes), max(f.BytesMax, pt.Bytes)
		e := 100 * math.Abs(l.rows[i].At(l.p)-l.ys[i]) / l.ys[i]
		if latencyBound(l.rows[i], l.p) {
			lat = append(lat, e)
		} else {
			bw = append(bw, e)
		}
	}
	f.ErrLatencyPct, f.ErrBandwidthPct = medianOr(lat), medianOr(bw)
	return f
}

func distinctSizes(pts []Point) int {
	seen := map[int64]bool{}
	for _, p := range pts {
		seen[p.Bytes] = true
	}
	return len(seen)
}

// latencyBound reports whether α and latency make more than half of t at p.
func latencyBound(t Terms, p Params) bool {
	return t.Alpha*p.Alpha+t.Latency*p.Latency > 0.5*t.At(p)
}

func medianOr(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	return stats.Median(xs)
}

// solve is weighted least squares of ys on rows' α, κ, γ and Step (those
// free says), the residuals relative (each row divided by its y), the
// latency and β terms fixed at fixed's; a parameter that comes out
// negative is dropped and the rest refitted.
func solve(rows []Terms, ys, w []float64, fixed Params, free [nFit]bool) Params {
	use := free
	for {
		var ata [nFit][nFit]float64
		var atb [nFit]float64
		for i, t := range rows {
			x := [nFit]float64{t.Alpha, t.Kappa, t.Gamma, t.Steps}
			y := ys[i] - t.Latency*fixed.Latency - t.Beta*fixed.Beta
			s := w[i] / (ys[i] * ys[i])
			for j := range nFit {
				if !use[j] {
					continue
				}
				atb[j] += s * x[j] * y
				for k := range nFit {
					if use[k] {
						ata[j][k] += s * x[j] * x[k]
					}
				}
			}
		}
		for j := range nFit {
			if !use[j] {
				ata[j][j] = 1
			}
			ata[j][j] *= 1 + 1e-9 // a touch of ridge: γ and κ can be collinear
			if ata[j][j] == 0 {
				ata[j][j] = 1
			}
		}
		x := gauss(ata, atb)
		neg := false
		for j := range nFit {
			if use[j] && x[j] < 0 {
				use[j], neg = false, true
			}
		}
		if !neg {
			return Params{Alpha: x[0], Latency: fixed.Latency, Beta: fixed.Beta, Kappa: x[1], Gamma: x[2], Step: x[3], Crowd: fixed.Crowd}
		}
	}
}

// nFit is how many parameters solve fits: α, κ, γ and Step.
const nFit = 4

// gauss solves a small system by elimination with partial pivoting.
func gauss(a [nFit][nFit]float64, b [nFit]float64) [nFit]float64 {
	for c := range nFit {
		p := c
		for r := c + 1; r < nFit; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		a[c], a[p] = a[p], a[c]
		b[c], b[p] = b[p], b[c]
		if a[c][c] == 0 {
			continue
		}
		for r := c + 1; r < nFit; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < nFit; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	var x [nFit]float64
	for r := nFit - 1; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < nFit; k++ {
			s -= a[r][k] * x[k]
		}
		if a[r][r] != 0 {
			x[r] = s / a[r][r]
		}
	}
	return x
}
