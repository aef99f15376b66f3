package costmodel

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/distbench/distbench/stats"
)

// Grid is what `distbench model predict` asks: algorithms × world sizes ×
// sizes on one network.
type Grid struct {
	Algos []string
	NPs   []int
	Sizes []int64
	// Link is the NIC's shape (its name, as a sweep records it, and its
	// rate and latency); Intra that of links within a host.
	LinkName     string
	Link, Intra  Params
	Hosts        int
	PerHost      int
	Oversub      float64
	Cal          *Calibration // nil: uncalibrated
	Alpha, Gamma float64      // software costs where nothing calibrated says
	// Stragglers, as Topology has them: a slow NIC (host), a slow rank
	// (−1: none), and start delays drawn from Delays (seconds).
	SlowNIC, SlowRank             int
	SlowNICFactor, SlowRankFactor float64
	Delays                        []float64
}

// Prediction is one predicted point.
type Prediction struct {
	Algo         string  `json:"algo"`
	NP           int     `json:"np"`
	Bytes        int64   `json:"bytes"`
	Seconds      float64 `json:"seconds"`
	BusBW        float64 `json:"busbw_gbs"`
	Method       Method  `json:"method"`
	Extrapolated bool    `json:"extrapolated"`
	Why          string  `json:"why,omitempty"` // why it is an extrapolation
}

// params returns the costs g predicts algo with at (np, bytes), and why
// they extrapolate, if they do.
func (g *Grid) params(algo string, np int, bytes int64) (inter, intra Params, why string) {
	inter, intra = g.Link, g.Intra
	inter.Alpha, inter.Gamma, intra.Alpha, intra.Gamma = g.Alpha, g.Gamma, g.Alpha, g.Gamma
	if g.Cal == nil {
		return inter, intra, "uncalibrated"
	}
	// A calibration fits the tree's defaults as the two algorithms they
	// run (Ran): predict with the fit of the one that runs at this size.
	names := []string{algo}
	if a, err := Lookup(algo); err == nil && a.Ran(np, bytes).Name != algo {
		names = append(names, a.Ran(np, bytes).Name)
	}
	f, ok := g.Cal.Lookup(names[0], g.LinkName)
	if !ok && len(names) > 1 {
		f, ok = g.Cal.Lookup(names[1], g.LinkName)
	}
	if ok {
		inter, intra = f.Params, f.Params
		if g.Intra != g.Link { // within a host the wire is another
			intra.Beta, intra.Latency = g.Intra.Beta, g.Intra.Latency
		}
		if f.Extrapolates(np, bytes) {
			why = fmt.Sprintf("outside np %d–%d, %d–%d B", f.NPMin, f.NPMax, f.BytesMin, f.BytesMax)
		}
		return inter, intra, why
	}
	for _, f := range g.Cal.Fits {
		if slices.Contains(names, f.Algo) { // its software costs, measured on another link
			inter.Alpha, inter.Gamma, inter.Kappa = f.Params.Alpha, f.Params.Gamma, f.Params.Kappa
			intra.Alpha, intra.Gamma, intra.Kappa = f.Params.Alpha, f.Params.Gamma, f.Params.Kappa
			return inter, intra, "calibrated on " + linkLabel(f.Link)
		}
	}
	return inter, intra, "not calibrated"
}

// Predict predicts every point of g, simulating where it can, in parallel.
func (g *Grid) Predict() ([]Prediction, error) {
	type job struct {
		a     Algorithm
		np    int
		bytes int64
	}
	var jobs []job
	for _, name := range g.Algos {
		a, err := Lookup(name)
		if err != nil {
			return nil, err
		}
		for _, np := range g.NPs {
			if np > g.Hosts*g.PerHost {
				return nil, fmt.Errorf("model: np %d is more than the %dx%d hosts hold", np, g.Hosts, g.PerHost)
			}
			for _, b := range g.Sizes {
				jobs = append(jobs, job{a, np, b})
			}
		}
	}
	out := make([]Prediction, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			inter, intra, why := g.params(j.a.Name, j.np, j.bytes)
			per := min(g.PerHost, j.np)
			topo := Topology{Hosts: (j.np + per - 1) / per, PerHost: per, Intra: intra, Inter: inter,
				Oversub: max(1, g.Oversub), SlowNIC: g.SlowNIC, SlowRank: g.SlowRank,
				SlowNICFactor: g.SlowNICFactor, SlowRankFactor: g.SlowRankFactor}
			if g.Delays != nil {
				topo.Delay = DrawDelays(j.np, g.Delays, uint64(j.np))
			}
			t, m, err := j.a.Predict(topo, j.np, j.bytes)
			if err != nil {
				errs[i] = fmt.Errorf("%s np %d %d B: %w", j.a.Name, j.np, j.bytes, err)
				return
			}
			f, _ := stats.BusBWFactor(j.a.Collective, j.np)
			out[i] = Prediction{Algo: j.a.Name, NP: j.np, Bytes: j.bytes, Seconds: t, BusBW: stats.AlgBW(j.bytes, t) * f,
				Method: m, Extrapolated: why != "", Why: why}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// linkLabel names a calibration's link: "" is the sweep's unshaped one.
func linkLabel(link string) string {
	if link == "" {
		return "the unshaped link (loopback)"
	}
	return link
}

// Guessed says whether p's algorithm has no calibration at all, so that
// its software costs are the defaults ("uncalibrated" without a
// calibration, "not calibrated" where one lacks the algorithm), not
// measured here or on another link.
func (p Prediction) Guessed() bool {
	return p.Why == "uncalibrated" || p.Why == "not calibrated"
}

// Winner is the fastest algorithm predicted at one (np, size).
type Winner struct {
	NP    int
	Bytes int64
	Algo  string
	// Runner is the runner-up, "" when only one algorithm was predicted.
	Runner string
	// Margin is how much slower the runner-up is, as a fraction.
	Margin float64
}

// Winners returns the fastest of preds per (np, size), of one collective.
func Winners(preds []Prediction) []Winner {
	type key struct {
		np    int
		bytes int64
	}
	best := map[key][]Prediction{}
	for _, p := range preds {
		k := key{p.NP, p.Bytes}
		best[k] = append(best[k], p)
	}
	var out []Winner
	for k, ps := range best {
		sort.Slice(ps, func(i, j int) bool {
			return ps[i].Seconds < ps[j].Seconds || ps[i].Seconds == ps[j].Seconds && ps[i].Algo < ps[j].Algo
		})
		w := Winner{NP: k.np, Bytes: k.bytes, Algo: ps[0].Algo}
		if len(ps) > 1 && ps[0].Seconds > 0 {
			w.Margin = ps[1].Seconds/ps[0].Seconds - 1
			w.Runner = ps[1].Algo
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].NP < out[j].NP || out[i].NP == out[j].NP && out[i].Bytes < out[j].Bytes
	})
	return out
}
