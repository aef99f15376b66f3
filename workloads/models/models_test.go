package models

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/distbench/distbench/workloads/nn"
)

func TestParameterCounts(t *testing.T) {
	tests := []struct {
		model   string
		in      Shape
		classes int
		want    int
	}{
		{"resnet18", ImageNet, 1000, 11_689_512},
		{"resnet50", ImageNet, 1000, 25_557_032},
		{"resnet20", CIFAR10, 10, 269_722},
		{"resnet20", MNIST, 10, 269_434},
		{"lenet", MNIST, 10, 21_840},
		{"lenet", CIFAR10, 10, 31_340}, // 3 input channels; fc1 sees 20×5×5
		{"mlp", MNIST, 10, 784*512 + 512 + 512*256 + 256 + 256*10 + 10},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s-%v", tc.model, tc.in), func(t *testing.T) {
			p, err := Profile(tc.model, tc.in, tc.classes)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Bytes / 4; got != tc.want {
				t.Errorf("%d parameters, want %d", got, tc.want)
			}
		})
	}
}

func TestUnknownModel(t *testing.T) {
	_, err := New("alexnet", MNIST, 10, 1)
	if err == nil {
		t.Fatal("no error")
	}
	for _, n := range []string{"lenet", "mlp", "resnet18", "resnet20", "resnet50"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %s", err, n)
		}
	}
}

func TestBadShapes(t *testing.T) {
	tests := []struct {
		model   string
		in      Shape
		classes int
	}{
		{"lenet", Shape{1, 8, 8}, 10},
		{"lenet", MNIST, 1},
		{"mlp", Shape{0, 28, 28}, 10},
		{"resnet20", Shape{3, 2, 2}, 10},
	}
	for _, tc := range tests {
		if _, err := New(tc.model, tc.in, tc.classes, 1); err == nil {
			t.Errorf("New(%s, %v, %d): no error", tc.model, tc.in, tc.classes)
		}
	}
}

func TestSeededInit(t *testing.T) {
	a, _ := New("lenet", MNIST, 10, 7)
	b, _ := New("lenet", MNIST, 10, 7)
	c, _ := New("lenet", MNIST, 10, 8)
	same := func(x, y []float32) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a.Data, b.Data) {
		t.Error("same seed, different parameters")
	}
	if same(a.Data, c.Data) {
		t.Error("different seeds, same parameters")
	}
	// torch's default init: every lenet weight and bias in ±1/√fan_in.
	for _, p := range a.Param {
		fanIn := p.Numel() / p.Shape[0]
		if len(p.Shape) == 1 { // bias: fan_in of its layer's weight
			fanIn = a.Param[p.Index-1].Numel() / p.Shape[0]
		}
		bound := 1 / math.Sqrt(float64(fanIn))
		lo, hi := 0.0, 0.0
		for _, v := range p.Data {
			lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
		}
		if lo < -bound || hi > bound || hi-lo < bound {
			t.Errorf("%s: values in [%.4f, %.4f], want spread over ±%.4f", p.Name, lo, hi, bound)
		}
	}
}

// TestGradReadyOrder runs every model forward and backward on a tiny batch
// and checks that the hook sees every parameter once, in exactly the
// reverse of the flat layout, which is what makes DDP buckets contiguous.
func TestGradReadyOrder(t *testing.T) {
	tests := []struct {
		model string
		in    Shape
	}{
		{"mlp", Shape{1, 4, 4}},
		{"lenet", MNIST},
		{"resnet20", Shape{3, 8, 8}},
		{"resnet18", Shape{3, 16, 16}},
		{"resnet50", Shape{3, 16, 16}},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			net, err := New(tc.model, tc.in, 10, 1)
			if err != nil {
				t.Fatal(err)
			}
			x := nn.NewTensor(2, tc.in.C, tc.in.H, tc.in.W)
			for i := range x.Data {
				x.Data[i] = float32(math.Sin(float64(i)))
			}
			var got []*nn.Param
			net.OnGradReady(func(p *nn.Param) { got = append(got, p) })
			loss, _ := net.ForwardBackward(x, []int{1, 2})
			if math.IsNaN(float64(loss)) || loss <= 0 {
				t.Fatalf("loss %v", loss)
			}
			want := net.ReadyOrder()
			if len(got) != len(want) {
				t.Fatalf("%d hooks, want %d", len(got), len(want))
			}
			next := len(net.Data)
			for i, p := range got {
				if p != want[i] {
					t.Fatalf("hook %d: %s, want %s", i, p.Name, want[i].Name)
				}
				if p.Offset+p.Numel() != next {
					t.Fatalf("%s ends at %d, want %d", p.Name, p.Offset+p.Numel(), next)
				}
				next = p.Offset
			}
			for _, b := range nn.AssignBuckets(got, 0, 0) {
				if !b.Contiguous {
					t.Errorf("%v not contiguous", b)
				}
			}
		})
	}
}

func TestDDPBuckets(t *testing.T) {
	p, err := Profile("resnet50", ImageNet, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tensors[0].Name != "fc.bias" || p.Tensors[1].Name != "fc.weight" || p.Tensors[len(p.Tensors)-1].Name != "conv1.weight" {
		t.Errorf("ready order starts %s, %s and ends %s", p.Tensors[0].Name, p.Tensors[1].Name, p.Tensors[len(p.Tensors)-1].Name)
	}
	if len(p.Tensors) != 161 {
		t.Errorf("%d tensors, want torchvision's 161", len(p.Tensors))
	}
	for _, capMiB := range []float64{0, 25, 5, 100} {
		bs := p.Buckets(capMiB)
		eff := capMiB
		if eff <= 0 {
			eff = 25
		}
		total, next := 0, len(p.Tensors)
		for i, b := range bs {
			total += b.Bytes
			limit := int(eff * (1 << 20))
			if i == 0 {
				limit = 1 << 20
			}
			// Closed as soon as it reached its limit: without its last tensor
			// it was under; only the final bucket may stay under.
			last := 4 * b.Params[len(b.Params)-1].Numel()
			if b.Bytes-last >= limit || (b.Bytes < limit && i != len(bs)-1) {
				t.Errorf("cap %v: bucket %d has %d bytes against limit %d", capMiB, i, b.Bytes, limit)
			}
			if !b.Contiguous {
				t.Errorf("cap %v: bucket %d not contiguous", capMiB, i)
			}
			_ = next
		}
		if total != p.Bytes {
			t.Errorf("cap %v: buckets hold %d bytes, want %d", capMiB, total, p.Bytes)
		}
	}
	// fc (2048×1000 + 1000 floats, 8 MB) alone passes the 1 MiB first cap.
	sizes := p.BucketBytes(25)
	if sizes[0] != 4*(1000+2048*1000) {
		t.Errorf("first bucket %d bytes, want fc's %d", sizes[0], 4*(1000+2048*1000))
	}
	t.Logf("resnet50 DDP buckets (25 MiB): %d buckets, MiB: %v", len(sizes), mib(sizes))
}

func mib(sizes []int) []string {
	s := make([]string, len(sizes))
	for i, b := range sizes {
		s[i] = fmt.Sprintf("%.2f", float64(b)/(1<<20))
	}
	return s
}

type golden struct {
	Model  string    `json:"model"`
	Shape  []int     `json:"shape"`
	Labels []int     `json:"labels"`
	Train  bool      `json:"train"`
	Loss   float64   `json:"loss"`
	Out    []float64 `json:"out"`
	Grads  []struct {
		Name string    `json:"name"`
		Sum  float64   `json:"sum"`
		Abs  float64   `json:"abs"`
		Head []float64 `json:"head"`
	} `json:"grads"`
}

// TestMatchesPyTorch checks outputs, loss and gradients of lenet (eval) and
// resnet20 (train, batch statistics) against PyTorch in float64, with the
// same parameters (testdata/torch_golden.py): same layouts, same names in
// the same order, same arithmetic.
func TestMatchesPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []golden
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, g := range cases {
		t.Run(g.Model, func(t *testing.T) {
			net, err := New(g.Model, Shape{g.Shape[1], g.Shape[2], g.Shape[3]}, 10, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i := range net.Data {
				net.Data[i] = float32(0.2 * math.Sin(0.37*float64(i)+0.1))
			}
			x := nn.NewTensor(g.Shape...)
			for i := range x.Data {
				x.Data[i] = float32(math.Cos(0.05 * float64(i)))
			}
			net.SetTrain(g.Train)
			loss, _ := net.ForwardBackward(x, g.Labels)
			near := func(what string, got float32, want, scale float64) {
				t.Helper()
				if math.Abs(float64(got)-want) > 2e-4*(scale+math.Abs(want)) {
					t.Errorf("%s = %.7g, torch %.7g", what, got, want)
				}
			}
			near("loss", loss, g.Loss, 1)
			if len(g.Grads) != len(net.Param) {
				t.Fatalf("%d parameters, torch has %d", len(net.Param), len(g.Grads))
			}
			for i, gp := range g.Grads {
				p := net.Param[i]
				if p.Name != gp.Name {
					t.Errorf("parameter %d is %s, torch's %s", i, p.Name, gp.Name)
				}
				var sum, abs float64
				for _, v := range p.Grad {
					sum += float64(v)
					abs += math.Abs(float64(v))
				}
				near(p.Name+" Σgrad", float32(sum), gp.Sum, gp.Abs)
				near(p.Name+" Σ|grad|", float32(abs), gp.Abs, 1e-3)
				for j, h := range gp.Head {
					near(fmt.Sprintf("%s.grad[%d]", p.Name, j), p.Grad[j], h, gp.Abs/float64(p.Numel())+1e-3)
				}
			}
		})
	}
}
