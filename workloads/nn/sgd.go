package nn

import "fmt"

// SGD is torch.optim.SGD: stochastic gradient descent with optional
// momentum, dampening, Nesterov momentum and L2 weight decay, applied to a
// net's flat buffers in one pass. For each element, with g its gradient:
//
//	g ← g + WeightDecay·p
//	v ← g (first step), else v ← Momentum·v + (1−Dampening)·g
//	g ← g + Momentum·v (Nesterov), else g ← v (when Momentum ≠ 0)
//	p ← p − LR·g
//
// Weight decay applies to every parameter, BatchNorm's and biases included,
// as torch's default does.
type SGD struct {
	LR          float64
	Momentum    float64
	Dampening   float64
	WeightDecay float64
	Nesterov    bool

	velocity []float32
	started  bool
}

// Validate reports settings torch would refuse.
func (o *SGD) Validate() error {
	switch {
	case o.LR < 0:
		return fmt.Errorf("nn: SGD: learning rate %v < 0", o.LR)
	case o.Momentum < 0:
		return fmt.Errorf("nn: SGD: momentum %v < 0", o.Momentum)
	case o.WeightDecay < 0:
		return fmt.Errorf("nn: SGD: weight decay %v < 0", o.WeightDecay)
	case o.Nesterov && (o.Momentum <= 0 || o.Dampening != 0):
		return fmt.Errorf("nn: SGD: Nesterov momentum requires a momentum and zero dampening")
	}
	return nil
}

// Step updates params in place from grads (same length: a net's Data and
// Grad). It uses the current LR, so a schedule may set it between steps.
func (o *SGD) Step(params, grads []float32) {
	if len(params) != len(grads) {
		panic(fmt.Sprintf("nn: SGD.Step: %d parameters, %d gradients", len(params), len(grads)))
	}
	if o.Momentum != 0 && len(o.velocity) != len(params) {
		o.velocity = make([]float32, len(params))
		o.started = false
	}
	first := !o.started
	o.started = true
	// Large nets are memory-bound here; two halves on two cores nearly halve it.
	const chunk = 1 << 16
	workers := 1
	if len(params) >= 4*chunk {
		workers = (*Ctx)(nil).workers()
	}
	parallel(workers, len(params), func(_, lo, hi int) {
		o.step(params[lo:hi], grads[lo:hi], o.velocitySlice(lo, hi), first)
	})
}

func (o *SGD) velocitySlice(lo, hi int) []float32 {
	if o.velocity == nil {
		return nil
	}
	return o.velocity[lo:hi]
}

func (o *SGD) step(p, g, v []float32, first bool) {
	lr, mom, damp, wd := float32(o.LR), float32(o.Momentum), float32(1-o.Dampening), float32(o.WeightDecay)
	g = g[:len(p)]
	switch {
	case mom == 0:
		for i, gi := range g {
			p[i] -= lr * (gi + wd*p[i])
		}
	case first:
		v = v[:len(p)]
		for i, gi := range g {
			d := gi + wd*p[i]
			v[i] = d
			if o.Nesterov {
				d += mom * d
			}
			p[i] -= lr * d
		}
	default:
		v = v[:len(p)]
		for i, gi := range g {
			d := gi + wd*p[i]
			vi := mom*v[i] + damp*d
			v[i] = vi
			if o.Nesterov {
				d += mom * vi
			} else {
				d = vi
			}
			p[i] -= lr * d
		}
	}
}

// Velocity is the momentum buffer (nil before the first step or without
// momentum), laid out like the parameters.
func (o *SGD) Velocity() []float32 { return o.velocity }
