package costmodel

import "math"

// maxSimMessages bounds the messages Predict simulates for one point
// through the discrete-event path; past it (a tree or parameter server of
// thousands of ranks and gigabytes) it answers from the closed form.
// Schedules that every rank runs turned (the ring) always simulate.
const maxSimMessages = 4_000_000

// Method says how a time was predicted.
type Method string

const (
	BySim    Method = "sim"
	ByClosed Method = "closed"
)

// estimate is a rough count of the messages a's program sends.
func estimate(a Algorithm, n int, S int64) float64 {
	per := math.Max(1, float64(S)/float64(64<<10))
	switch a.Strategy {
	case "ps":
		return float64(n) * float64(n) * (per/16 + 3)
	case "tree":
		return float64(n) * 4 * per
	}
	return float64(n) * 2 * per
}

// simulable reports whether Predict simulates a at n ranks and S bytes.
func (a Algorithm) simulable(n int, S int64) bool {
	if a.Program == nil {
		return false
	}
	if a.Strategy == "ring" && a.Collective == "allreduce" && (a.Name == "ring/rsag" || !ringAutoWhole(n, S)) {
		return true // the turned schedule: rank by rank, no event queue
	}
	return estimate(a, n, S) <= maxSimMessages
}

// Predict returns the time of a at n ranks and S bytes on topo, simulated
// where that is feasible and from the closed form at topo.Inter otherwise.
func (a Algorithm) Predict(topo Topology, n int, S int64) (float64, Method, error) {
	if a.Hier != nil && topo.PerHost > 1 && n > topo.PerHost {
		return a.predictHier(topo, n, S)
	}
	if !a.simulable(n, S) {
		return a.Closed(topo.Inter, n, S), ByClosed, nil
	}
	prog := a.Program(n, S)
	t := topo
	if size := prog.Size(); size > t.Hosts*t.PerHost && t.PerHost == 1 {
		t.Hosts = size // dedicated servers: hosts of their own
	}
	r, err := Simulate(prog, t)
	if err != nil {
		return 0, BySim, err
	}
	return r.Time, BySim, nil
}

// TermsAt returns a's time at p as coefficients of the parameters: from
// the closed form, or, where a is simulated, from the simulator itself.
// A simulated time is piecewise linear in the parameters and scales with
// them (doubling every cost doubles it), so by Euler's theorem it is the
// sum of each parameter times its partial derivative, which a small step
// measures exactly away from the pieces' edges.
//
// topo places the ranks with the parameters it is given.
func (a Algorithm) TermsAt(p Params, n int, S int64, topo func(Params) Topology) (Terms, Method, error) {
	if !a.simulable(n, S) || n > 64 {
		return a.closedTerms(p, n, S), ByClosed, nil
	}
	at := func(q Params) (float64, error) {
		t, _, err := a.Predict(topo(q), n, S)
		return t, err
	}
	t0, err := at(p)
	if err != nil {
		return Terms{}, BySim, err
	}
	var out [6]float64
	ptr := func(q *Params, i int) *float64 {
		return [...]*float64{&q.Alpha, &q.Latency, &q.Beta, &q.Gamma, &q.Kappa, &q.Step}[i]
	}
	for i := range 6 {
		q := p
		v := ptr(&q, i)
		h := math.Max(*v*1e-3, [...]float64{1e-9, 1e-9, 1e-13, 1e-13, 1e-13, 1e-9}[i])
		*v += h
		t1, err := at(q)
		if err != nil {
			return Terms{}, BySim, err
		}
		out[i] = (t1 - t0) / h
	}
	return Terms{Alpha: out[0], Latency: out[1], Beta: out[2], Gamma: out[3], Kappa: out[4], Steps: out[5]}, BySim, nil
}

// predictHier predicts a hierarchical algorithm on topo's hosts (the last
// one partly filled where n is not a multiple of its ranks per host).
func (a Algorithm) predictHier(topo Topology, n int, S int64) (float64, Method, error) {
	var hosts []int
	for left := n; left > 0; left -= topo.PerHost {
		hosts = append(hosts, min(left, topo.PerHost))
	}
	if estimate(a, n, S) > maxSimMessages || n > 512 {
		return a.HierClosed(topo.Intra, topo.Inter, len(hosts), topo.PerHost, S), ByClosed, nil
	}
	r, err := Simulate(a.Hier(hosts, S), topo)
	if err != nil {
		return 0, BySim, err
	}
	return r.Time, BySim, nil
}
