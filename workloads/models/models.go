package models

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/distbench/distbench/workloads/nn"
)

// Shape is the shape of one input sample: channels, height, width.
type Shape struct{ C, H, W int }

func (s Shape) String() string { return fmt.Sprintf("%d×%d×%d", s.C, s.H, s.W) }

// Common input shapes.
var (
	MNIST    = Shape{1, 28, 28} // MNIST and Fashion-MNIST
	CIFAR10  = Shape{3, 32, 32}
	ImageNet = Shape{3, 224, 224}
)

// Builder constructs a model's layers and loss for an input shape and a
// number of classes; [New] lays out and initialises its parameters.
type Builder func(in Shape, classes int) (nn.Layer, nn.Loss, error)

var (
	mu       sync.RWMutex
	builders = map[string]Builder{}
)

// Register makes a model available by name. It panics if the name is empty,
// taken, or b is nil; the built-in models register from init.
func Register(name string, b Builder) {
	mu.Lock()
	defer mu.Unlock()
	if name == "" || b == nil {
		panic("models: Register with an empty name or nil builder")
	}
	if _, dup := builders[name]; dup {
		panic("models: Register called twice for " + name)
	}
	builders[name] = b
}

// Names lists the registered models, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(builders))
	for n := range builders {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func build(name string, in Shape, classes int) (nn.Layer, nn.Loss, error) {
	mu.RLock()
	b, ok := builders[name]
	mu.RUnlock()
	if !ok {
		return nil, nil, fmt.Errorf("models: unknown model %q (accepted: %s)", name, strings.Join(Names(), ", "))
	}
	if in.C <= 0 || in.H <= 0 || in.W <= 0 {
		return nil, nil, fmt.Errorf("models: %s: bad input shape %v", name, in)
	}
	if classes < 2 {
		return nil, nil, fmt.Errorf("models: %s: need at least 2 classes, got %d", name, classes)
	}
	root, loss, err := b(in, classes)
	if err != nil {
		return nil, nil, fmt.Errorf("models: %s for input %v: %w", name, in, err)
	}
	return root, loss, nil
}

// New builds the named model for inputs of shape in (C, H, W) and the given
// number of classes, its parameters initialised from seed: the same seed
// gives the same parameters everywhere, as data-parallel ranks need. An
// unknown name is an error that lists the accepted ones.
func New(name string, in Shape, classes int, seed uint64) (*nn.Net, error) {
	root, loss, err := build(name, in, classes)
	if err != nil {
		return nil, err
	}
	return nn.NewNet(name, root, loss, seed)
}

// spatial follows an H×W plane through a convolution or pooling window,
// failing when it vanishes.
func spatial(h, w, k, stride, pad int) (int, int, error) {
	oh, ow := nn.ConvOut(h, k, stride, pad), nn.ConvOut(w, k, stride, pad)
	if oh <= 0 || ow <= 0 {
		return 0, 0, fmt.Errorf("a %d×%d plane is too small for a %d×%d window", h, w, k, k)
	}
	return oh, ow, nil
}
