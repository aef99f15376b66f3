package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestWinogradTransforms checks the assembly transforms (input, output
// and the output's adjoint) against the Go ones bit for bit, for every map from 1×1 to 32 wide: every value of every
// tile written where the tiles say, the planes around left alone, and
// only the map's pixels written back.
func TestWinogradTransforms(t *testing.T) {
	if !winogradAsm {
		t.Skip("no AVX-512: the Go transforms run, and are the reference")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, h := range []int{1, 2, 3, 7, 14, 28, 31} {
		for w := 1; w <= 32; w++ {
			p := newWinograd(nil, h, w)
			tt := p.th * p.tw
			ld := tt + 5 // values apart, with a gap that must stay untouched
			x := randSlice(rng, h*w)
			got := make([]float32, 16*ld+7)
			want := make([]float32, len(got))
			for i := range got {
				got[i], want[i] = -3, -3
			}
			winogradIn(got, ld, x, p)
			winogradInGo(want, ld, x, p)
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%d×%d: input transform [%d] = %v, want %v", h, w, i, got[i], want[i])
			}
			m := randSlice(rng, 16*ld)
			yGot := make([]float32, h*w+9)
			yWant := make([]float32, len(yGot))
			for i := range yGot {
				yGot[i], yWant[i] = float32(math.NaN()), -5
			}
			for i := h * w; i < len(yGot); i++ {
				yGot[i] = -5
			}
			winogradOut(yGot, m, ld, p)
			winogradOutGo(yWant, m, ld, p)
			if i := firstDiff(yGot, yWant); i >= 0 {
				t.Fatalf("%d×%d: output transform [%d] = %v, want %v", h, w, i, yGot[i], yWant[i])
			}
			for i := range got {
				got[i], want[i] = -3, -3
			}
			winogradOutAdj(got, ld, x, p)
			winogradOutAdjGo(want, ld, x, p)
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%d×%d: output transform's adjoint [%d] = %v, want %v", h, w, i, got[i], want[i])
			}
		}
	}
}

// TestWinogradSmall checks the small maps' kernels (a plane in four
// registers, wgSmall's tables) against the Go transforms bit for bit, for
// every map they take, three planes a call at a stride with a gap.
func TestWinogradSmall(t *testing.T) {
	if !winogradAsm {
		t.Skip("no AVX-512: the Go transforms run")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	const ch = 3
	for h := 1; h <= 64; h++ {
		for w := 1; w <= 64; w++ {
			if !smallFits(h, w) {
				continue
			}
			p := newWinograd(nil, h, w)
			if p.small == nil {
				t.Fatalf("%d×%d: no small tables", h, w)
			}
			hw, tt := h*w, p.th*p.tw
			step := tt + 2
			ld := ch*step + 3
			x := randSlice(rng, ch*hw)
			got := make([]float32, 16*ld+5)
			want := make([]float32, len(got))
			for i := range got {
				got[i], want[i] = -3, -3
			}
			winogradInSmall(got, ld, x, ch, step, p)
			for k := 0; k < ch; k++ {
				winogradInGo(want[k*step:], ld, x[k*hw:], p)
			}
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%d×%d: input [%d] = %v, want %v", h, w, i, got[i], want[i])
			}
			m := randSlice(rng, 16*ld)
			yGot := make([]float32, ch*hw+9)
			yWant := make([]float32, len(yGot))
			for i := range yGot {
				yGot[i], yWant[i] = float32(math.NaN()), -5
			}
			for i := ch * hw; i < len(yGot); i++ {
				yGot[i] = -5
			}
			winogradOutSmall(yGot, m, ld, ch, step, p)
			for k := 0; k < ch; k++ {
				winogradOutGo(yWant[k*hw:], m[k*step:], ld, p)
			}
			if i := firstDiff(yGot, yWant); i >= 0 {
				t.Fatalf("%d×%d: output [%d] = %v, want %v", h, w, i, yGot[i], yWant[i])
			}
		}
	}
}

// TestWinogradSmallLayout pins wgSmall's layout to the offsets the
// assembly reads it at.
func TestWinogradSmallLayout(t *testing.T) {
	var s wgSmall
	for _, f := range []struct {
		what      string
		got, want uintptr
	}{
		{"wgGather size", unsafe.Sizeof(s.in[0]), 72},
		{"wgGather.lo", unsafe.Offsetof(s.in[0].lo), 64},
		{"wgGather.hi", unsafe.Offsetof(s.in[0].hi), 66},
		{"out", unsafe.Offsetof(s.out), 1152},
		{"load", unsafe.Offsetof(s.load), 1440},
		{"tiles", unsafe.Offsetof(s.tiles), 1448},
	} {
		if f.got != f.want {
			t.Errorf("%s: %d, the assembly's %d", f.what, f.got, f.want)
		}
	}
}

// firstDiff is the first index where a and b differ in bits, or −1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestWinogradConv checks Conv2d through F(2×2, 3×3) against a float64
// convolution: the output, dX and dW within float32 rounding of the
// terms' magnitudes; the output and dX the same bits for one worker and
// three (dW sums the workers' parts in another order). With the Go
// transforms too.
func TestWinogradConv(t *testing.T) {
	defer func(u, s bool, w int) { useWinograd, winogradAsm, winogradMinWidth = u, s, w }(useWinograd, winogradAsm, winogradMinWidth)
	winogradMinWidth = 1
	rng := rand.New(rand.NewPCG(9, 10))
	for _, asm := range []bool{true, false} {
		if asm && !winogradAsm {
			continue // the Go transforms only
		}
		for _, tc := range []struct{ n, in, out, h, w int }{
			{2, 16, 16, 28, 28}, {5, 32, 32, 14, 14}, {17, 64, 64, 7, 7}, {3, 8, 12, 5, 9},
			{2, 9, 8, 1, 1}, {2, 8, 8, 2, 3}, {1, 8, 8, 32, 32}, {3, 8, 10, 31, 17},
		} {
			t.Run(fmt.Sprintf("asm=%v/%+v", asm, tc), func(t *testing.T) {
				winogradAsm = asm
				x := &Tensor{Shape: []int{tc.n, tc.in, tc.h, tc.w}, Data: randSlice(rng, tc.n*tc.in*tc.h*tc.w)}
				dy := &Tensor{Shape: []int{tc.n, tc.out, tc.h, tc.w}, Data: randSlice(rng, tc.n*tc.out*tc.h*tc.w)}
				wts := randSlice(rng, tc.out*tc.in*9)
				run := func(wino bool, workers int) (y, dx, dw []float32) {
					useWinograd = wino
					c := NewConv2d("c", tc.in, tc.out, 3, 1, 1, false)
					if _, err := NewNet("t", c, nil, 1); err != nil {
						t.Fatal(err)
					}
					copy(c.Weight.Data, wts)
					ctx := &Ctx{Train: true, Workers: workers}
					y = append([]float32(nil), c.Forward(ctx, x).Data...)
					if (c.wino != nil) != wino {
						t.Fatalf("Winograd plan %v, want %v", c.wino != nil, wino)
					}
					dx = append([]float32(nil), c.Backward(ctx, dy).Data...)
					return y, dx, c.Weight.Grad
				}
				y, dx, dw := run(true, 1)
				y3, dx3, dw3 := run(true, 3)
				for _, d := range []struct {
					what      string
					got, want []float32
				}{{"output, 3 workers", y3, y}, {"dX, 3 workers", dx3, dx}} {
					if i := firstDiff(d.got, d.want); i >= 0 {
						t.Fatalf("%s [%d] = %v, want %v", d.what, i, d.got[i], d.want[i])
					}
				}
				yRef, yMag := refConvSame(x.Data, wts, tc.n, tc.in, tc.out, tc.h, tc.w, false)
				dxRef, dxMag := refConvSame(dy.Data, wts, tc.n, tc.out, tc.in, tc.h, tc.w, true)
				dwRef, dwMag := refWeightGrad(x.Data, dy.Data, tc.n, tc.in, tc.out, tc.h, tc.w)
				checkWithin(t, "output", y, yRef, yMag)
				checkWithin(t, "dX", dx, dxRef, dxMag)
				checkWithin(t, "dW", dw, dwRef, dwMag)
				checkWithin(t, "dW, 3 workers", dw3, dwRef, dwMag)
			})
		}
	}
}

// refConvSame is a same-size 3×3 convolution in float64 of n images of in
// channels under w [out][in][3][3], with the sum of its terms' magnitudes;
// with adjoint, the input gradient's (src is dY with w's out channels,
// w's in channels come out).
func refConvSame(src, w []float32, n, in, out, h, wd int, adjoint bool) (y, mag []float64) {
	y, mag = make([]float64, n*out*h*wd), make([]float64, n*out*h*wd)
	for i := 0; i < n; i++ {
		for o := 0; o < out; o++ {
			for r := 0; r < h; r++ {
				for c := 0; c < wd; c++ {
					var s, a float64
					for ci := 0; ci < in; ci++ {
						for kr := 0; kr < 3; kr++ {
							for kc := 0; kc < 3; kc++ {
								var sr, sc int
								var k float32
								if adjoint { // dx[o] += dy[ci][r−kr+1][c−kc+1]·w[ci][o][kr][kc]
									sr, sc, k = r-kr+1, c-kc+1, w[((ci*out+o)*3+kr)*3+kc]
								} else {
									sr, sc, k = r+kr-1, c+kc-1, w[((o*in+ci)*3+kr)*3+kc]
								}
								if sr < 0 || sr >= h || sc < 0 || sc >= wd {
									continue
								}
								v := float64(k) * float64(src[((i*in+ci)*h+sr)*wd+sc])
								s += v
								a += math.Abs(v)
							}
						}
					}
					at := ((i*out+o)*h+r)*wd + c
					y[at], mag[at] = s, a
				}
			}
		}
	}
	return y, mag
}

// refWeightGrad is the same-size 3×3 convolution's dW in float64, with
// the sum of its terms' magnitudes: dW[o][i][kr][kc] = Σ dy[o][r][c]·
// x[i][r+kr−1][c+kc−1] over the images and the map.
func refWeightGrad(x, dy []float32, n, in, out, h, wd int) (dw, mag []float64) {
	dw, mag = make([]float64, out*in*9), make([]float64, out*in*9)
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			for k := 0; k < 9; k++ {
				kr, kc := k/3, k%3
				var s, a float64
				for b := 0; b < n; b++ {
					for r := 0; r < h; r++ {
						for c := 0; c < wd; c++ {
							sr, sc := r+kr-1, c+kc-1
							if sr < 0 || sr >= h || sc < 0 || sc >= wd {
								continue
							}
							v := float64(dy[((b*out+o)*h+r)*wd+c]) * float64(x[((b*in+i)*h+sr)*wd+sc])
							s += v
							a += math.Abs(v)
						}
					}
				}
				dw[(o*in+i)*9+k], mag[(o*in+i)*9+k] = s, a
			}
		}
	}
	return dw, mag
}

// checkWithin fails unless every got is want within 4·10⁻⁶ of its terms'
// magnitudes (float32 rounding over the transforms and the sums).
func checkWithin(t *testing.T, what string, got []float32, want, mag []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= 4e-6*mag[i]+1e-30) {
			t.Fatalf("%s [%d] = %v, want %v (error %.3g of magnitude %.3g)", what, i, got[i], want[i], d, mag[i])
		}
	}
}

// BenchmarkWinogradTransforms times the input and output transforms of
// one 28×28 and one 14×14 plane, in cache: ns a tile row.
func BenchmarkWinogradTransforms(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, hw := range []int{28, 14} {
		p := newWinograd(nil, hw, hw)
		tt := p.th * p.tw
		x, v := randSlice(rng, hw*hw), make([]float32, 16*tt)
		b.Run(fmt.Sprintf("%dx%d/in", hw, hw), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				winogradIn(v, tt, x, p)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*p.th), "ns/tilerow")
		})
		b.Run(fmt.Sprintf("%dx%d/out", hw, hw), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				winogradOut(x, v, tt, p)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*p.th), "ns/tilerow")
		})
	}
}
