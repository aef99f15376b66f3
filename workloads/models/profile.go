package models

import (
	"github.com/distbench/distbench/workloads/nn"
)

// GradTensor is one parameter's gradient as a communication payload.
type GradTensor struct {
	Name   string
	Shape  []int
	Elems  int
	Bytes  int // float32
	Offset int // first element in the flat gradient buffer
}

// GradProfile is what one training step of a model hands to
// communication: its gradient tensors in the order backward makes them
// ready.
type GradProfile struct {
	Model   string
	Input   Shape
	Classes int
	Tensors []GradTensor // gradient-ready order
	Bytes   int          // all gradients, float32

	ready []*nn.Param
}

// Profile describes the named model's gradients without allocating or
// initialising its parameters, so even ResNet-50's is instant.
func Profile(name string, in Shape, classes int) (*GradProfile, error) {
	root, _, err := build(name, in, classes)
	if err != nil {
		return nil, err
	}
	ps, total, err := nn.Plan(root)
	if err != nil {
		return nil, err
	}
	return newProfile(name, in, classes, nn.ReadyOrder(ps), total), nil
}

func newProfile(name string, in Shape, classes int, ready []*nn.Param, total int) *GradProfile {
	p := &GradProfile{Model: name, Input: in, Classes: classes, Bytes: 4 * total, ready: ready}
	for _, q := range ready {
		p.Tensors = append(p.Tensors, GradTensor{Name: q.Name, Shape: q.Shape, Elems: q.Numel(), Bytes: 4 * q.Numel(), Offset: q.Offset})
	}
	return p
}

// Buckets groups the gradients as PyTorch DDP does in steady state (see
// [nn.AssignBuckets]): the first bucket closes at 1 MiB, DDP's
// _DEFAULT_FIRST_BUCKET_BYTES, and later ones at capMiB (≤ 0 means DDP's
// default bucket_cap_mb, 25). Each bucket is a contiguous slice of the
// flat gradient buffer.
func (p *GradProfile) Buckets(capMiB float64) []nn.Bucket {
	capBytes := int(capMiB * (1 << 20))
	return nn.AssignBuckets(p.ready, nn.DefaultFirstBucketBytes, capBytes)
}

// BucketBytes is Buckets reduced to the byte size of each bucket, in the
// order DDP launches their allreduces: one training step's gradient
// communication, ready to replay.
func (p *GradProfile) BucketBytes(capMiB float64) []int {
	bs := p.Buckets(capMiB)
	sizes := make([]int, len(bs))
	for i, b := range bs {
		sizes[i] = b.Bytes
	}
	return sizes
}
