package nn

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Net is a built network: a root layer, its loss, and all parameters and
// gradients in one flat buffer each.
//
// Params are laid out in registration (forward) order and their gradients
// become ready during Backward in exactly the reverse order, so any run of
// consecutive parameters in gradient-ready order, such as a DDP bucket, is
// one contiguous slice of Grad: see [Net.ReadyOrder] and [AssignBuckets].
//
// A Net is not safe for concurrent use; run one per goroutine (per rank).
type Net struct {
	Name  string
	Root  Layer
	Loss  Loss
	Ctx   Ctx      // Train, dropout Rand, Workers and the GradReady hook
	Param []*Param // registration order; Param[i].Index == i
	Data  []float32
	Grad  []float32

	out *Tensor
}

// Plan numbers root's parameters in registration order and sets each
// one's Index and Offset in the flat buffers, without allocating them. It
// returns the parameters and the total number of elements. Two parameters
// sharing one *Param is an error: gradients could not be contiguous.
func Plan(root Layer) ([]*Param, int, error) {
	ps := root.Params()
	seen := make(map[*Param]bool, len(ps))
	off := 0
	for i, p := range ps {
		if seen[p] {
			return nil, 0, fmt.Errorf("nn: parameter %q registered twice", p.Name)
		}
		seen[p] = true
		p.Index, p.Offset = i, off
		off += p.Numel()
	}
	return ps, off, nil
}

// NewNet builds a network: it lays out root's parameters in one flat buffer
// (and their gradients in another), initialises them from seed, and seeds
// the dropout generator from seed too. The same seed gives the same
// parameters on every machine. Ctx.Train starts true.
func NewNet(name string, root Layer, loss Loss, seed uint64) (*Net, error) {
	ps, total, err := Plan(root)
	if err != nil {
		return nil, err
	}
	n := &Net{Name: name, Root: root, Loss: loss, Param: ps,
		Data: make([]float32, total), Grad: make([]float32, total)}
	for _, p := range ps {
		p.Data = n.Data[p.Offset : p.Offset+p.Numel() : p.Offset+p.Numel()]
		p.Grad = n.Grad[p.Offset : p.Offset+p.Numel() : p.Offset+p.Numel()]
	}
	root.Init(rand.New(rand.NewPCG(seed, 0x1d17bec4)))
	n.Ctx = Ctx{Train: true, Rand: rand.New(rand.NewPCG(seed, 0xd7099a7))}
	return n, nil
}

// SeedDropout reseeds the dropout generator; data-parallel ranks, which
// share parameter seeds, pass distinct seeds here (seed+rank).
func (n *Net) SeedDropout(seed uint64) { n.Ctx.Rand = rand.New(rand.NewPCG(seed, 0xd7099a7)) }

// NumParams is the number of trainable scalars.
func (n *Net) NumParams() int { return len(n.Data) }

// SetTrain selects training (true) or evaluation mode.
func (n *Net) SetTrain(train bool) { n.Ctx.Train = train }

// OnGradReady sets the hook called in Backward with each parameter once its
// gradient is final, in [Net.ReadyOrder]; nil removes it. The hook runs on
// the goroutine calling Backward, between layers: it may start an
// asynchronous reduction of a finished bucket, but must not write to
// gradients that are not yet ready.
func (n *Net) OnGradReady(f func(p *Param)) { n.Ctx.GradReady = f }

// ReadyOrder lists the parameters in the order their gradients become
// ready during Backward: the reverse of registration order.
func (n *Net) ReadyOrder() []*Param { return ReadyOrder(n.Param) }

// ReadyOrder reverses registration order into gradient-ready order.
func ReadyOrder(registration []*Param) []*Param {
	r := make([]*Param, len(registration))
	for i, p := range registration {
		r[len(r)-1-i] = p
	}
	return r
}

// Buffers lists the net's buffers (BatchNorm running statistics).
func (n *Net) Buffers() []*Buffer { return buffersOf(n.Root) }

// ZeroGrad clears all gradients, as optimizer.zero_grad(set_to_none=False).
func (n *Net) ZeroGrad() { clear(n.Grad) }

// Forward runs the network on x in the current mode; the output is owned
// by the net.
func (n *Net) Forward(x *Tensor) *Tensor {
	n.out = n.Root.Forward(&n.Ctx, x)
	return n.out
}

// Backward propagates the gradient of the loss computed on the last
// Forward's output, adding into Grad and firing the GradReady hook.
func (n *Net) Backward() {
	if n.Loss == nil {
		panic("nn: Net.Backward on a net built without a loss")
	}
	n.Root.Backward(&n.Ctx, n.Loss.Backward())
}

// BackwardFrom propagates dy, a gradient with respect to the last
// Forward's output that was computed elsewhere (DataParallel's master
// computes the loss of the whole batch and hands each replica its rows),
// adding into Grad and firing the GradReady hook as Backward does.
func (n *Net) BackwardFrom(dy *Tensor) {
	if n.out == nil || !slices.Equal(dy.Shape, n.out.Shape) {
		panic(fmt.Sprintf("nn: Net.BackwardFrom: gradient of shape %v for an output of shape %v", dy.Shape, n.outShape()))
	}
	n.Root.Backward(&n.Ctx, dy)
}

func (n *Net) outShape() []int {
	if n.out == nil {
		return nil
	}
	return n.out.Shape
}

// ForwardBackward runs one training pass on a minibatch: forward, loss,
// backward. Gradients add into Grad (call ZeroGrad first, as in torch) and
// the GradReady hook fires as each becomes final. It returns the mean loss
// and the number of correct predictions.
func (n *Net) ForwardBackward(x *Tensor, labels []int) (loss float32, correct int) {
	if n.Loss == nil {
		panic("nn: Net.ForwardBackward on a net built without a loss")
	}
	out := n.Forward(x)
	loss = n.Loss.Forward(out, labels)
	correct = Correct(out, labels)
	n.Backward()
	return loss, correct
}

// Evaluate runs the network in evaluation mode on a minibatch and returns
// the mean loss and the number of correct predictions, leaving the mode as
// it was.
func (n *Net) Evaluate(x *Tensor, labels []int) (loss float32, correct int) {
	if n.Loss == nil {
		panic("nn: Net.Evaluate on a net built without a loss")
	}
	train := n.Ctx.Train
	n.Ctx.Train = false
	defer func() { n.Ctx.Train = train }()
	out := n.Forward(x)
	return n.Loss.Forward(out, labels), Correct(out, labels)
}
