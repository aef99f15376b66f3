package costmodel

import (
	"encoding/json"
	"fmt"
	"math"
)

// Params are the costs of one network shape, in seconds: Alpha per message
// (the software's wake-up and matching, which occupies the sender), Latency
// per hop (the wire's, overlapping with other messages), Beta per byte on
// the link (1/bandwidth), Kappa per byte of the sender's CPU (the kernel's
// copies, which a loaded host slows where the wire does not), and Gamma
// per byte reduced. Step is a wake-up: what a rank pays per wait for a
// message where its host runs more ranks than cores (the scheduler runs
// the others first), times (f^Crowd − 1)/Crowd at f running ranks per
// core (ln f at Crowd 0, f − 1 at Crowd 1); nothing otherwise.
//
// Crowd is how a host's running ranks per core, f > 1, weigh on the
// software: α grows by f^Crowd and a wake-up as above, while κ and γ grow
// by f whatever Crowd is. It is the host's, not the link's: calibrate fits
// one for all the algorithms and links of its sweeps (docs/design/costmodel.md has
// what this project's sweeps gave: lower on a quiet machine than a busy).
type Params struct {
	Alpha   float64 `json:"alpha_s"`
	Latency float64 `json:"latency_s"`
	Beta    float64 `json:"beta_s_per_byte"`
	Gamma   float64 `json:"gamma_s_per_byte"`
	Kappa   float64 `json:"kappa_s_per_byte,omitempty"`
	Step    float64 `json:"step_s,omitempty"`
	Crowd   float64 `json:"crowd"`
}

// UnmarshalJSON reads p, with Crowd 1 where the JSON has none: a
// calibration written before Crowd was fitted, under the proportional
// growth it then had.
func (p *Params) UnmarshalJSON(b []byte) error {
	type plain Params
	q := plain{Crowd: 1}
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = Params(q)
	return nil
}

// Validate says what is wrong with p, if anything.
func (p Params) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"alpha", p.Alpha}, {"latency", p.Latency}, {"beta", p.Beta}, {"gamma", p.Gamma}, {"kappa", p.Kappa}, {"step", p.Step}, {"crowd", p.Crowd}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("model: %s = %v: want a finite value ≥ 0", f.name, f.v)
		}
	}
	return nil
}

// FromLink returns the wire part of Params for a link of rate bits per
// second and latency seconds (what `--link 10Gbit,25us` shapes), with the
// software costs alpha and gamma, which a link does not say.
func FromLink(rateBits, latency, alpha, gamma float64) Params {
	p := Params{Alpha: alpha, Latency: latency, Gamma: gamma}
	if rateBits > 0 {
		p.Beta = 8 / rateBits
	}
	return p
}
