package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The gradient checks prove Backward consistent with Forward; these prove
// Forward computes the right function, against naive definitions.

func naiveConv(x *Tensor, w, b []float32, out, k, s, p int) *Tensor {
	n, c, h, wd := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	oh, ow := ConvOut(h, k, s, p), ConvOut(wd, k, s, p)
	y := NewTensor(n, out, oh, ow)
	for i := 0; i < n; i++ {
		for o := 0; o < out; o++ {
			for yy := 0; yy < oh; yy++ {
				for xx := 0; xx < ow; xx++ {
					var acc float64
					if b != nil {
						acc = float64(b[o])
					}
					for ci := 0; ci < c; ci++ {
						for ki := 0; ki < k; ki++ {
							for kj := 0; kj < k; kj++ {
								iy, ix := yy*s-p+ki, xx*s-p+kj
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								acc += float64(x.Data[((i*c+ci)*h+iy)*wd+ix]) * float64(w[((o*c+ci)*k+ki)*k+kj])
							}
						}
					}
					y.Data[((i*out+o)*oh+yy)*ow+xx] = float32(acc)
				}
			}
		}
	}
	return y
}

func randTensor(rng *rand.Rand, shape ...int) *Tensor {
	t := NewTensor(shape...)
	for i := range t.Data {
		t.Data[i] = float32(rng.NormFloat64())
	}
	return t
}

func assertClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestConvForwardMatchesNaive(t *testing.T) {
	tests := []struct {
		in                    []int
		out, k, s, p, workers int
		bias                  bool
	}{
		{[]int{2, 3, 7, 6}, 4, 3, 1, 1, 1, true},
		{[]int{3, 2, 9, 9}, 5, 3, 2, 1, 2, false},
		{[]int{2, 4, 5, 5}, 3, 1, 1, 0, 2, true},
		{[]int{2, 4, 6, 7}, 3, 1, 2, 0, 1, false},
		{[]int{5, 1, 12, 12}, 6, 5, 1, 0, 3, true},
		{[]int{1, 3, 11, 11}, 2, 7, 2, 3, 1, false},
		// Wider than one GEMM tile in every direction.
		{[]int{2, 30, 15, 15}, 70, 3, 1, 1, 2, true},
	}
	for i, tc := range tests {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		c := NewConv2d("c", tc.in[1], tc.out, tc.k, tc.s, tc.p, tc.bias)
		if _, err := NewNet("t", c, nil, 1); err != nil {
			t.Fatal(err)
		}
		x := randTensor(rng, tc.in...)
		var b []float32
		if c.Bias != nil {
			b = c.Bias.Data
		}
		want := naiveConv(x, c.Weight.Data, b, tc.out, tc.k, tc.s, tc.p)
		got := c.Forward(&Ctx{Workers: tc.workers}, x)
		if !sameShape(got.Shape, want.Shape) {
			t.Fatalf("case %d: shape %v, want %v", i, got.Shape, want.Shape)
		}
		assertClose(t, "conv", got.Data, want.Data, 1e-4)
	}
}

func TestPoolForward(t *testing.T) {
	x := FromSlice([]float32{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12,
		13, 14, 15, 16,
	}, 1, 1, 4, 4)
	tests := []struct {
		name  string
		layer Layer
		want  []float32
	}{
		{"max2", NewMaxPool2d(2, 0, 0), []float32{6, 8, 14, 16}},
		{"max3-s2-p1", NewMaxPool2d(3, 2, 1), []float32{6, 8, 14, 16}},
		{"avg2", NewAvgPool2d(2, 0, 0), []float32{3.5, 5.5, 11.5, 13.5}},
		// count_include_pad: the corner window holds 1,2,5,6 of 9 cells.
		{"avg3-s2-p1", NewAvgPool2d(3, 2, 1), []float32{14.0 / 9, 30.0 / 9, 57.0 / 9, 99.0 / 9}},
		{"global", NewGlobalAvgPool(), []float32{8.5}},
	}
	for _, tc := range tests {
		got := tc.layer.Forward(&Ctx{}, x)
		assertClose(t, tc.name, got.Data, tc.want, 1e-6)
	}
}

func TestBatchNormStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	bn := NewBatchNorm2d("bn", 2)
	if _, err := NewNet("t", bn, nil, 1); err != nil {
		t.Fatal(err)
	}
	x := randTensor(rng, 4, 2, 3, 3)
	for i := range x.Data {
		x.Data[i] = x.Data[i]*2 + 3
	}
	y := bn.Forward(&Ctx{Train: true}, x)
	for c := 0; c < 2; c++ {
		var vals []float64
		for i := 0; i < 4; i++ {
			for j := 0; j < 9; j++ {
				vals = append(vals, float64(x.Data[(i*2+c)*9+j]))
			}
		}
		mean, ss := 0.0, 0.0
		for _, v := range vals {
			mean += v
		}
		mean /= float64(len(vals))
		for _, v := range vals {
			ss += (v - mean) * (v - mean)
		}
		// torch: running ← 0.9·running + 0.1·batch, running var unbiased.
		if got, want := float64(bn.RunningMean.Data[c]), 0.1*mean; math.Abs(got-want) > 1e-5 {
			t.Errorf("running mean[%d] = %v, want %v", c, got, want)
		}
		if got, want := float64(bn.RunningVar.Data[c]), 0.9+0.1*ss/float64(len(vals)-1); math.Abs(got-want) > 1e-5 {
			t.Errorf("running var[%d] = %v, want %v", c, got, want)
		}
		// The output has zero mean and (biased) unit variance per channel.
		var ym, yv float64
		for i := 0; i < 4; i++ {
			for j := 0; j < 9; j++ {
				v := float64(y.Data[(i*2+c)*9+j])
				ym += v
				yv += v * v
			}
		}
		if ym /= 36; math.Abs(ym) > 1e-5 || math.Abs(yv/36-1) > 1e-3 {
			t.Errorf("channel %d: output mean %v, mean square %v", c, ym, yv/36)
		}
	}
}

func TestConvWorkersAgree(t *testing.T) {
	// Splitting the batch changes only the order partial gradients are
	// summed in.
	rng := rand.New(rand.NewPCG(9, 9))
	x := randTensor(rng, 5, 3, 6, 6)
	dy := randTensor(rng, 5, 4, 6, 6)
	var grads [][]float32
	for _, w := range []int{1, 2, 5} {
		c := NewConv2d("c", 3, 4, 3, 1, 1, true)
		net, err := NewNet("t", c, nil, 3)
		if err != nil {
			t.Fatal(err)
		}
		ctx := &Ctx{Workers: w}
		c.Forward(ctx, x)
		dx := c.Backward(ctx, dy)
		grads = append(grads, append(append([]float32(nil), net.Grad...), dx.Data...))
	}
	for i := 1; i < len(grads); i++ {
		assertClose(t, "grad", grads[i], grads[0], 1e-5)
	}
}

// TestIm2colMatchesNaive checks every im2col path (straight copies,
// same-size shifted copies, the general one) against the definition.
func TestIm2colMatchesNaive(t *testing.T) {
	for _, g := range [][5]int{ // c, h, w, k, pad; stride 1 and 2
		{2, 7, 6, 3, 1}, {1, 5, 5, 5, 2}, {3, 4, 9, 1, 0}, {2, 6, 5, 5, 0}, {2, 3, 3, 3, 1}, {1, 2, 2, 5, 2}, {1, 1, 1, 5, 2}, {2, 8, 7, 3, 2},
	} {
		for s := 1; s <= 2; s++ {
			c, h, w, k, pad := g[0], g[1], g[2], g[3], g[4]
			oh, ow := ConvOut(h, k, s, pad), ConvOut(w, k, s, pad)
			x := make([]float32, c*h*w)
			for i := range x {
				x[i] = float32(i + 1)
			}
			ld := oh*ow + 3
			col := make([]float32, c*k*k*ld)
			for i := range col {
				col[i] = -1 // every entry must be written
			}
			im2col(x, c, h, w, k, s, pad, oh, ow, col, ld)
			for ci := 0; ci < c; ci++ {
				for ki := 0; ki < k; ki++ {
					for kj := 0; kj < k; kj++ {
						r := (ci*k+ki)*k + kj
						for oy := 0; oy < oh; oy++ {
							for ox := 0; ox < ow; ox++ {
								iy, ix := oy*s-pad+ki, ox*s-pad+kj
								var want float32
								if iy >= 0 && iy < h && ix >= 0 && ix < w {
									want = x[(ci*h+iy)*w+ix]
								}
								if got := col[r*ld+oy*ow+ox]; got != want {
									t.Fatalf("%v stride %d: row %d at (%d,%d) = %v, want %v", g, s, r, oy, ox, got, want)
								}
							}
						}
					}
				}
			}
			// col2im is the adjoint: <im2col(x), y> = <x, col2im(y)>, in
			// small integers so that both sides are exact.
			y := make([]float32, len(col))
			var lhs float64
			for r := 0; r < c*k*k; r++ {
				for q := 0; q < oh*ow; q++ {
					y[r*ld+q] = float32((r*7+q*3)%5 - 2)
					lhs += float64(col[r*ld+q]) * float64(y[r*ld+q])
				}
			}
			xg := make([]float32, len(x))
			col2im(y, ld, c, h, w, k, s, pad, oh, ow, xg)
			var rhs float64
			for i := range x {
				rhs += float64(x[i]) * float64(xg[i])
			}
			if lhs != rhs {
				t.Fatalf("%v stride %d: <im2col(x), y> = %v, <x, col2im(y)> = %v", g, s, lhs, rhs)
			}
		}
	}
}
