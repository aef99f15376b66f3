package nn

import "math/rand/v2"

// Sequential chains layers, as torch.nn.Sequential.
type Sequential struct {
	Layers []Layer
}

// NewSequential returns the chain of layers.
func NewSequential(layers ...Layer) *Sequential { return &Sequential{Layers: layers} }

// Add appends layers to the chain.
func (s *Sequential) Add(layers ...Layer) { s.Layers = append(s.Layers, layers...) }

func (s *Sequential) Forward(c *Ctx, x *Tensor) *Tensor {
	for _, l := range s.Layers {
		x = l.Forward(c, x)
	}
	return x
}

// Backward runs the layers backwards. A layer that skips its input gradient
// (returns nil) ends the pass; only parameter-free layers may precede it.
func (s *Sequential) Backward(c *Ctx, dy *Tensor) *Tensor {
	for i := len(s.Layers) - 1; i >= 0; i-- {
		dy = s.Layers[i].Backward(c, dy)
		if dy == nil {
			for _, l := range s.Layers[:i] {
				if len(l.Params()) > 0 {
					panic("nn: Sequential: a layer that skips its input gradient follows one with parameters")
				}
			}
			return nil
		}
	}
	return dy
}

func (s *Sequential) Params() []*Param {
	var ps []*Param
	for _, l := range s.Layers {
		ps = append(ps, l.Params()...)
	}
	return ps
}

func (s *Sequential) Buffers() []*Buffer { return buffersOf(s.Layers...) }

func (s *Sequential) Init(rng *rand.Rand) {
	for _, l := range s.Layers {
		l.Init(rng)
	}
}

func buffersOf(layers ...Layer) []*Buffer {
	var bs []*Buffer
	for _, l := range layers {
		if b, ok := l.(BufferLayer); ok {
			bs = append(bs, b.Buffers()...)
		}
	}
	return bs
}
