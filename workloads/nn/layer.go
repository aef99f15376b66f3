package nn

import (
	"math/rand/v2"
	"runtime"
)

// Param is one parameter tensor. Data and Grad are views into a [Net]'s flat
// parameter and gradient buffers once the net is built, so a run of
// parameters is a contiguous slice of each buffer.
type Param struct {
	Name  string // torch-style state_dict name, such as "layer1.0.conv1.weight"
	Shape []int
	Data  []float32
	Grad  []float32

	// Index is the position in registration (forward) order and Offset the
	// first element in the flat buffers; both are set when the net is built.
	Index  int
	Offset int
}

func newParam(name string, shape ...int) *Param {
	return &Param{Name: name, Shape: shape, Index: -1, Offset: -1}
}

// Numel is the number of elements.
func (p *Param) Numel() int { return numel(p.Shape) }

// Buffer is named state that is not trained by gradients, such as
// BatchNorm's running statistics (torch's module buffers). DDP broadcasts
// these from rank 0; a training loop may do the same.
type Buffer struct {
	Name string
	Data []float32
}

// Ctx carries what one pass through a network needs besides its input.
type Ctx struct {
	// Train selects training behaviour: dropout active, BatchNorm on batch
	// statistics (and updating its running ones).
	Train bool
	// Rand drives dropout masks.
	Rand *rand.Rand
	// Workers is how many goroutines batch-parallel layers use; 0 means
	// GOMAXPROCS. Results are bit-for-bit reproducible for a fixed value.
	Workers int
	// GradReady, when set, is called during Backward once each parameter's
	// gradient is final for this pass, in gradient-ready order.
	GradReady func(p *Param)
}

func (c *Ctx) workers() int {
	if c == nil || c.Workers <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return c.Workers
}

// Ready reports ps as having final gradients. A layer calls it at the end of
// its Backward with its own parameters, which it announces in reverse
// registration order, so that a whole net's gradients become ready in exactly
// the reverse of its layout order and DDP-style buckets are contiguous.
func (c *Ctx) Ready(ps ...*Param) {
	if c == nil || c.GradReady == nil {
		return
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i] != nil {
			c.GradReady(ps[i])
		}
	}
}

// Layer is one differentiable step of a network.
//
// Forward returns a tensor owned by the layer; Backward takes the gradient
// of the loss with respect to that output and returns the gradient with
// respect to the input of the latest Forward, adding parameter gradients into
// Param.Grad (gradients accumulate until zeroed, as in torch).
type Layer interface {
	Forward(c *Ctx, x *Tensor) *Tensor
	Backward(c *Ctx, dy *Tensor) *Tensor
	// Params lists the layer's parameters, its children's included, in
	// registration order.
	Params() []*Param
	// Init sets the parameters to their initial values, drawing from rng in
	// registration order.
	Init(rng *rand.Rand)
}

// BufferLayer is implemented by layers that hold [Buffer]s.
type BufferLayer interface {
	Buffers() []*Buffer
}

// stateless is embedded by layers without parameters.
type stateless struct{}

func (stateless) Params() []*Param   { return nil }
func (stateless) Init(*rand.Rand)    {}
func (stateless) Buffers() []*Buffer { return nil }

// Compile-time proof that every layer is one.
var (
	_ Layer = (*Linear)(nil)
	_ Layer = (*Conv2d)(nil)
	_ Layer = (*MaxPool2d)(nil)
	_ Layer = (*AvgPool2d)(nil)
	_ Layer = (*GlobalAvgPool)(nil)
	_ Layer = (*BatchNorm2d)(nil)
	_ Layer = (*ReLU)(nil)
	_ Layer = (*Dropout)(nil)
	_ Layer = (*Flatten)(nil)
	_ Layer = (*LogSoftmax)(nil)
	_ Layer = (*Sequential)(nil)
	_ Layer = (*Residual)(nil)
	_ Layer = (*PadShortcut)(nil)

	_ BufferLayer = (*BatchNorm2d)(nil)
	_ BufferLayer = (*Sequential)(nil)
	_ BufferLayer = (*Residual)(nil)

	_ Loss = (*NLLLoss)(nil)
	_ Loss = (*CrossEntropyLoss)(nil)
)
