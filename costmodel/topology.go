package costmodel

import (
	"fmt"
	"math/rand/v2"
)

// Topology is where the ranks run: Hosts hosts of PerHost ranks each
// (rank r on host r/PerHost; ranks past Hosts×PerHost, a parameter
// server's dedicated servers, on hosts of their own), Intra the costs
// between ranks of one host and Inter those through the hosts' NICs.
type Topology struct {
	Hosts, PerHost int
	Intra, Inter   Params
	// Oversub ≥ 1 is the spine's oversubscription: with every NIC sending
	// at once (as a collective's steps do), a message between hosts gets
	// 1/Oversub of its NIC's rate.
	Oversub float64
	// SlowNIC, when ≥ 0, is a host whose NIC is SlowNICFactor times
	// slower (β × factor); SlowRank a rank whose software is
	// SlowRankFactor times slower (α and γ × factor).
	SlowNIC, SlowRank             int
	SlowNICFactor, SlowRankFactor float64
	// Cores, when > 0, is each host's CPU cores: where a host runs more
	// ranks than cores, each rank's per-byte software costs (κ, γ) grow
	// by ranks/cores, and α by its Crowd-th power (Params.Crowd), as on
	// this project's 2-core machines at np 8.
	Cores int
	// Delay, when set, is each rank's start delay in seconds: how late
	// it enters the collective (a straggler distribution, see DrawDelays).
	Delay []float64
}

// Flat is n ranks, one per host, every link with p's costs: the topology
// the closed forms describe.
func Flat(n int, p Params) Topology {
	return Topology{Hosts: n, PerHost: 1, Intra: p, Inter: p, Oversub: 1, SlowNIC: -1, SlowRank: -1}
}

// Validate says what is wrong with t for n ranks, if anything.
func (t Topology) Validate(n int) error {
	if t.Hosts < 1 || t.PerHost < 1 {
		return fmt.Errorf("model: topology %dx%d: want hosts ≥ 1 and ranks per host ≥ 1", t.Hosts, t.PerHost)
	}
	if t.Oversub != 0 && t.Oversub < 1 {
		return fmt.Errorf("model: oversubscription %v: want ≥ 1", t.Oversub)
	}
	if t.Delay != nil && len(t.Delay) < n {
		return fmt.Errorf("model: %d start delays for %d ranks", len(t.Delay), n)
	}
	if err := t.Intra.Validate(); err != nil {
		return err
	}
	return t.Inter.Validate()
}

func (t Topology) host(r int) int { return r / t.PerHost }

// cpu is a host's ranks per core where they outnumber its cores, else 1:
// the factor of their per-byte software costs.
func (t Topology) cpu() float64 {
	if t.Cores <= 0 || t.PerHost <= t.Cores {
		return 1
	}
	return float64(t.PerHost) / float64(t.Cores)
}

// OneHost is n ranks on one host of the given cores, every link with p's
// costs: how a sweep on one machine runs them.
func OneHost(n, cores int, p Params) Topology {
	return Topology{Hosts: 1, PerHost: n, Intra: p, Inter: p, Oversub: 1, SlowNIC: -1, SlowRank: -1, Cores: cores}
}

// DrawDelays draws n start delays from samples (seconds, e.g. how far each
// rank's iterations trailed the fastest in a sweep's rounds), with
// replacement, seeded: a per-rank delay distribution fitted by its
// empirical distribution.
func DrawDelays(n int, samples []float64, seed uint64) []float64 {
	d := make([]float64, n)
	if len(samples) == 0 {
		return d
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range d {
		d[i] = samples[rng.IntN(len(samples))]
	}
	return d
}
