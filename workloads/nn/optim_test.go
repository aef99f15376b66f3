package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSGDMatchesTorch replays three steps of torch.optim.SGD (values from
// torch 1.13 in float64).
func TestSGDMatchesTorch(t *testing.T) {
	grads := [][]float32{{0.5, -1, 2}, {0.1, 0.2, -0.3}, {-1, 0, 0.7}}
	tests := []struct {
		opt  SGD
		want []float64
	}{
		{SGD{LR: 0.1}, []float64{1.04, -1.92, 0.26}},
		{SGD{LR: 0.1, Momentum: 0.9}, []float64{0.9455, -1.767, -0.055}},
		{SGD{LR: 0.05, Momentum: 0.9, WeightDecay: 0.01, Nesterov: true}, []float64{0.9915916833, -1.8473472665, 0.1287271416}},
		{SGD{LR: 0.1, Momentum: 0.5, Dampening: 0.3, WeightDecay: 0.001}, []float64{0.9716610157, -1.8453200713, 0.132365542}},
	}
	for i, tc := range tests {
		if err := tc.opt.Validate(); err != nil {
			t.Fatal(err)
		}
		p := []float32{1, -2, 0.5}
		for _, g := range grads {
			tc.opt.Step(p, append([]float32(nil), g...))
		}
		for j := range p {
			if math.Abs(float64(p[j])-tc.want[j]) > 1e-6 {
				t.Errorf("case %d: p = %v, torch %v", i, p, tc.want)
				break
			}
		}
	}
}

func TestSGDLargeBufferParallel(t *testing.T) {
	// Above the parallel threshold the halves must match a serial update.
	n := 1<<18 + 3
	p1, p2, g := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		p1[i] = float32(i%13) * 0.1
		g[i] = float32(i%7) - 3
	}
	copy(p2, p1)
	a := &SGD{LR: 0.01, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4}
	b := *a
	for s := 0; s < 3; s++ {
		a.Step(p1, g)
		b.step(p2, g, ensureVelocity(&b, n), s == 0)
	}
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("element %d: %v vs %v", i, p1[i], p2[i])
		}
	}
}

func ensureVelocity(o *SGD, n int) []float32 {
	if o.velocity == nil {
		o.velocity = make([]float32, n)
	}
	return o.velocity
}

func TestSGDValidate(t *testing.T) {
	for _, o := range []SGD{{LR: -1}, {LR: 1, Momentum: -0.1}, {LR: 1, WeightDecay: -1}, {LR: 1, Nesterov: true}, {LR: 1, Momentum: 0.9, Dampening: 0.1, Nesterov: true}} {
		if o.Validate() == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestSchedules(t *testing.T) {
	tests := []struct {
		name string
		s    Schedule
		t    int
		want float64
	}{
		{"constant", Constant(0.1), 99, 0.1},
		{"step/0", StepLR{0.1, 30, 0.1}, 0, 0.1},
		{"step/29", StepLR{0.1, 30, 0.1}, 29, 0.1},
		{"step/30", StepLR{0.1, 30, 0.1}, 30, 0.01},
		{"step/65", StepLR{0.1, 30, 0.1}, 65, 0.001},
		{"multistep/59", MultiStepLR{0.1, []int{30, 60, 80}, 0.1}, 59, 0.01},
		{"multistep/80", MultiStepLR{0.1, []int{30, 60, 80}, 0.1}, 80, 1e-4},
		{"cosine/0", CosineLR{Base: 0.1, Total: 100}, 0, 0.1},
		{"cosine/50", CosineLR{Base: 0.1, Min: 0.02, Total: 100}, 50, 0.06},
		{"cosine/100", CosineLR{Base: 0.1, Min: 0.02, Total: 100}, 100, 0.02},
		{"warmup/0", Warmup{Steps: 5, StartFactor: 0.1, Then: Constant(0.4)}, 0, 0.04},
		{"warmup/2", Warmup{Steps: 5, StartFactor: 0.1, Then: Constant(0.4)}, 2, 0.4 * (0.1 + 0.9*0.4)},
		{"warmup/5", Warmup{Steps: 5, StartFactor: 0.1, Then: Constant(0.4)}, 5, 0.4},
		{"warmup-then-step", Warmup{Steps: 5, Then: StepLR{0.4, 30, 0.1}}, 31, 0.04},
	}
	for _, tc := range tests {
		if got := tc.s.LR(tc.t); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: LR(%d) = %v, want %v", tc.name, tc.t, got, tc.want)
		}
	}
	// Goyal et al.: 0.1 per 256 images; 8 workers × 32 images is 256.
	if got := LinearScaling(0.1, 8*32*4, 256); math.Abs(got-0.4) > 1e-12 {
		t.Errorf("LinearScaling = %v, want 0.4", got)
	}
}

func TestAssignBuckets(t *testing.T) {
	// Sizes in floats, registration order; ready order is the reverse.
	mk := func(sizes ...int) []*Param {
		var ps []*Param
		for i, n := range sizes {
			ps = append(ps, newParam(string(rune('a'+i)), n))
		}
		_, _, err := Plan(NewSequential(paramHolder(ps)))
		if err != nil {
			t.Fatal(err)
		}
		return ReadyOrder(ps)
	}
	const mib = 1 << 18 // floats in a MiB
	tests := []struct {
		name         string
		sizes        []int
		first, other int
		want         [][]string
	}{
		{"all-small", []int{10, 20, 30}, 0, 0, [][]string{{"c", "b", "a"}}},
		// The first bucket closes at 1 MiB, later ones at the cap.
		{"first-cap", []int{mib, mib, mib / 2, mib / 2}, 0, 2 << 20, [][]string{{"d", "c"}, {"b", "a"}}},
		{"huge-tensor", []int{10, 3 * mib, 10}, 1 << 20, 1 << 20, [][]string{{"c", "b"}, {"a"}}},
		{"exact-fill", []int{mib / 4, mib / 4, mib / 4, mib / 4}, 1 << 20, 1 << 20, [][]string{{"d", "c", "b", "a"}}},
	}
	for _, tc := range tests {
		bs := AssignBuckets(mk(tc.sizes...), tc.first, tc.other)
		var got [][]string
		for _, b := range bs {
			got = append(got, names(b.Params))
			if !b.Contiguous {
				t.Errorf("%s: %v not contiguous", tc.name, b)
			}
		}
		if fmtNames(got) != fmtNames(tc.want) {
			t.Errorf("%s: buckets %v, want %v", tc.name, got, tc.want)
		}
	}
}

func fmtNames(b [][]string) string {
	s := ""
	for _, x := range b {
		s += "["
		for _, n := range x {
			s += n + " "
		}
		s += "]"
	}
	return s
}

// paramHolder is a parameter-only layer for tests.
type paramHolder []*Param

func (p paramHolder) Forward(_ *Ctx, x *Tensor) *Tensor  { return x }
func (p paramHolder) Backward(_ *Ctx, d *Tensor) *Tensor { return d }
func (p paramHolder) Params() []*Param                   { return p }
func (p paramHolder) Init(*rand.Rand)                    {}
