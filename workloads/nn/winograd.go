package nn

// Winograd's F(2×2, 3×3) for the 3×3 convolutions that keep the map's size
// (stride 1, padding 1: ResNet's): each 2×2 block of outputs of a channel
// pair costs 16 multiplications instead of 36, so the forward product and
// the input gradient's (dX is the same convolution of dY under the kernel
// turned 180° with in and out swapped) do 4/9 of im2col's work. The
// transforms of Lavin and Gray (arXiv:1509.09308):
//
//	V = Bᵀ d B   (d: a 4×4 input tile, two apart in each direction)
//	U = G g Gᵀ   (g: a 3×3 kernel)
//	Y = Aᵀ M A   (M[ξ] = Σ over input channels of U[ξ]·V[ξ]: 16 GEMMs)
//
// The 16 products run through the same GEMM as im2col's, [out × in] by
// [in × tiles]; the input and output transforms are AVX-512 kernels over
// 16 tiles of a tile row at once (winograd_amd64.s), reading and writing
// NCHW planes in place, so no patch matrix and no group copies. dW is
// Gᵀ dU G of dU[ξ] = Σ over tiles of (A·dY·Aᵀ)[ξ]·V[ξ]ᵀ, by the dot
// kernel (a small map's dW stays im2col's: Conv2d.Backward). The results
// differ from im2col's by rounding only (the transforms' adds and the ½s
// of G); the output and dX are the same bits for any split of the batch
// (every sum runs in an order set by the geometry), dW sums the workers'
// parts in worker order, as im2col's.

// winogradTiles is the number of tiles a group's products aim for (the
// GEMM's n), winogradBytes the most its transformed input (or output)
// may take: both sets of 16 matrices stay in a core's L2 beside the
// weights. (ResNet-20's 28×28 layers then take 2 images a group, its
// 14×14 ones 5; 256 to 784 tiles measured the same within noise.)
var (
	winogradTiles = 784
	winogradBytes = 512 << 10
)

// winograd is the plan of a convolution run through F(2×2, 3×3): its map,
// its tiles and the transformed, packed weights of the last pass.
type winograd struct {
	h, w   int // the map, the input's and the output's
	th, tw int // tile rows and tiles a row: ⌈h/2⌉, ⌈w/2⌉
	inMask [5]uint16
	outMsk [3]uint16
	// U of the pass under way: [16][out][in] forward, [16][in][out] for
	// dX; and each U[ξ] packed for the GEMM.
	u  []float32
	pu [][]float32
	du []float32 // dW in the transformed domain, [16][out][in]
	// small holds the tables of a map whose plane and tiles fit one
	// register each (winograd_small.go), where the assembly runs; nil
	// otherwise.
	small *wgSmall
}

// winogradFits reports whether Conv2d runs through F(2×2, 3×3): a 3×3,
// stride 1, padding 1 convolution without bias, with at least 8 channels
// each way (fewer make the products too shallow to beat im2col's), on a
// map 13 to 32 wide (a tile row fills 7 to 16 lanes of one register; at
// 7×7 a tile row is 4 lanes and the transforms cost more than the
// products save) or, with the assembly, one small enough that a plane's
// tiles fill one register (smallFits: 7×7, 8×8).
func (c *Conv2d) winogradFits(h, w int) bool {
	return useWinograd && c.K == 3 && c.Stride == 1 && c.Pad == 1 && c.Bias == nil &&
		(w >= winogradMinWidth && w <= 32 || winogradAsm && smallFits(h, w)) && c.InC >= 8 && c.OutC >= 8 && h > 0
}

// winogradMinWidth is the narrowest map run through F(2×2, 3×3); the
// tests lower it to cover narrow maps.
var winogradMinWidth = 13

// newWinograd returns the plan for an h×w map, reusing p when it matches.
func newWinograd(p *winograd, h, w int) *winograd {
	if p != nil && p.h == h && p.w == w {
		return p
	}
	p = &winograd{h: h, w: w, th: (h + 1) / 2, tw: (w + 1) / 2}
	if winogradAsm && smallFits(h, w) {
		p.small = newSmall(h, w)
	}
	p.inMask = winogradInMasks(w, p.tw)
	p.outMsk = winogradOutMasks(w)
	return p
}

// winogradInMasks are the input kernel's lanes: the loads of a row's
// columns −1…14, 15…30 (the tiles' columns 0 and 1, de-interleaved), 1…16
// and 17…32 (columns 2 and 3), each lane set where its column is in the
// map, then the tiles of a row.
func winogradInMasks(w, tw int) [5]uint16 {
	var m [5]uint16
	for l := 0; l < 16; l++ {
		for i, first := range [4]int{-1, 15, 1, 17} {
			if col := first + l; col >= 0 && col < w {
				m[i] |= 1 << l
			}
		}
		if l < tw {
			m[4] |= 1 << l
		}
	}
	return m
}

// winogradOutMasks are the output kernel's lanes: a row's columns 0…15
// and 16…31 in the map, then the tiles of a row.
func winogradOutMasks(w int) [3]uint16 {
	var m [3]uint16
	for l := 0; l < 16; l++ {
		if l < w {
			m[0] |= 1 << l
		}
		if 16+l < w {
			m[1] |= 1 << l
		}
		if l < (w+1)/2 {
			m[2] |= 1 << l
		}
	}
	return m
}

// group is the number of images a product takes: winogradTiles' worth of
// tiles, no more than winogradBytes of transformed maps of ch channels.
func (p *winograd) group(n, ch int) int {
	tt := p.th * p.tw
	g := max(1, (winogradTiles+tt-1)/tt)
	g = min(g, max(1, winogradBytes/(16*ch*tt*4)))
	return min(n, g)
}

// transformWeights computes U = G g Gᵀ for every kernel of w [out][in][3][3],
// as 16 matrices [out][in] in dst, or with flip, of the kernel turned 180°
// as 16 matrices [in][out] (dX's). In float64, rounded once.
func transformWeights(dst []float32, w []float32, out, in int, flip bool) []float32 {
	dst = grow(dst, 16*out*in)
	var g [3][3]float64
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			k := w[(o*in+i)*9:]
			for r := 0; r < 3; r++ {
				for s := 0; s < 3; s++ {
					if flip {
						g[r][s] = float64(k[(2-r)*3+2-s])
					} else {
						g[r][s] = float64(k[r*3+s])
					}
				}
			}
			// Gg: 4×3, rows g0, (g0+g1+g2)/2, (g0−g1+g2)/2, g2.
			var t [4][3]float64
			for s := 0; s < 3; s++ {
				t[0][s] = g[0][s]
				t[1][s] = (g[0][s] + g[1][s] + g[2][s]) / 2
				t[2][s] = (g[0][s] - g[1][s] + g[2][s]) / 2
				t[3][s] = g[2][s]
			}
			at := o*in + i
			if flip {
				at = i*out + o
			}
			for r := 0; r < 4; r++ {
				u := [4]float64{t[r][0], (t[r][0] + t[r][1] + t[r][2]) / 2, (t[r][0] - t[r][1] + t[r][2]) / 2, t[r][2]}
				for s := 0; s < 4; s++ {
					dst[(r*4+s)*out*in+at] = float32(u[s])
				}
			}
		}
	}
	return dst
}

// packTransformed packs the 16 matrices of u, rows × cols each, for the
// GEMM.
func packTransformed(dst [][]float32, u []float32, rows, cols int) [][]float32 {
	if len(dst) < 16 {
		dst = make([][]float32, 16)
	}
	for xi := 0; xi < 16; xi++ {
		dst[xi] = packForGemm(dst[xi], false, false, rows, cols, 1, u[xi*rows*cols:], cols)
	}
	return dst
}

// winogradPass runs the n images of src (in channels) through c.wino
// into dst (out channels): the forward product, or with flip dX from dY
// (W turned 180°, in and out swapped).
func (c *Conv2d) winogradPass(ctx *Ctx, dst, src []float32, n, in, out int, flip bool) {
	p := c.wino
	p.u = transformWeights(p.u, c.Weight.Data, c.OutC, c.InC, flip)
	p.pu = packTransformed(p.pu, p.u, out, in)
	g := p.group(n, max(in, out))
	ng := (n + g - 1) / g
	c.scratch(splits(ctx.workers(), ng))
	parallel(ctx.workers(), ng, func(wk, lo, hi int) {
		sc := &c.ws[wk]
		for gi := lo; gi < hi; gi++ {
			i0 := gi * g
			gn := min(g, n-i0)
			tiles := gn * p.th * p.tw
			sc.wv = grow(sc.wv, 16*in*tiles)
			sc.wm = grow(sc.wm, 16*out*tiles)
			p.in(sc.wv, src, i0, gn, in)
			p.products(sc.wm, sc.wv, tiles, out, in)
			p.out(dst, sc.wm, i0, gn, out)
		}
	})
}

// winogradBackward adds dW to c.Weight.Grad and, unless NoInputGrad,
// writes dX to c.dx, from the n images' dy, group by group: V = Bᵀ x B
// and A·dY·Aᵀ give dU[ξ] += (A·dY·Aᵀ)[ξ]·V[ξ]ᵀ (summed over the batch,
// then dW = Gᵀ dU G), and dX is dY convolved under W turned 180°, in and
// out swapped, while the group's dY is still in cache.
func (c *Conv2d) winogradBackward(ctx *Ctx, dy []float32, n int) {
	p := c.wino
	if !c.NoInputGrad {
		p.u = transformWeights(p.u, c.Weight.Data, c.OutC, c.InC, true)
		p.pu = packTransformed(p.pu, p.u, c.InC, c.OutC)
	}
	nu := 16 * c.OutC * c.InC
	p.du = grow(p.du, nu)
	clear(p.du)
	g := p.group(n, max(c.InC, c.OutC))
	ng := (n + g - 1) / g
	nw := splits(ctx.workers(), ng)
	c.scratch(nw)
	parallel(ctx.workers(), ng, func(wk, lo, hi int) {
		sc := &c.ws[wk]
		du := p.du
		if wk > 0 {
			// Summed in worker order below, whatever the scheduling.
			sc.du = grow(sc.du, nu)
			clear(sc.du)
			du = sc.du
		}
		ch := max(c.InC, c.OutC)
		for gi := lo; gi < hi; gi++ {
			i0 := gi * g
			gn := min(g, n-i0)
			tiles := gn * p.th * p.tw
			sc.wv = grow(sc.wv, 16*ch*tiles)
			sc.wm = grow(sc.wm, 16*ch*tiles)
			p.in(sc.wv, c.x.Data, i0, gn, c.InC)
			p.outAdj(sc.wm, dy, i0, gn, c.OutC)
			for xi := 0; xi < 16; xi++ {
				gemmSerial(false, true, c.OutC, c.InC, tiles, 1, sc.wm[xi*c.OutC*tiles:], tiles,
					sc.wv[xi*c.InC*tiles:], tiles, 1, du[xi*nu/16:], c.InC)
			}
			if c.NoInputGrad {
				continue
			}
			p.in(sc.wm, dy, i0, gn, c.OutC)
			p.products(sc.wv, sc.wm, tiles, c.InC, c.OutC)
			p.out(c.dx.Data, sc.wv, i0, gn, c.InC)
		}
	})
	for wk := 1; wk < nw; wk++ {
		axpy(1, c.ws[wk].du, p.du)
	}
	addWeightGrad(c.Weight.Grad, p.du, c.OutC, c.InC)
}

// in transforms images [i0, i0+g) of src, ch planes an image, into v:
// [16][ch][g·tiles], image j's tiles from column j·tiles.
func (p *winograd) in(v, src []float32, i0, g, ch int) {
	hw, tt := p.h*p.w, p.th*p.tw
	for j := 0; j < g; j++ {
		if p.small != nil {
			winogradInSmall(v[j*tt:], ch*g*tt, src[(i0+j)*ch*hw:], ch, g*tt, p)
			continue
		}
		for ci := 0; ci < ch; ci++ {
			winogradIn(v[ci*g*tt+j*tt:], ch*g*tt, src[((i0+j)*ch+ci)*hw:], p)
		}
	}
}

// outAdj is in for dY under A·dY·Aᵀ (the output transform's adjoint);
// only winogradBackward calls it, never for a small map.
func (p *winograd) outAdj(m, dy []float32, i0, g, ch int) {
	hw, tt := p.h*p.w, p.th*p.tw
	for j := 0; j < g; j++ {
		for co := 0; co < ch; co++ {
			winogradOutAdj(m[co*g*tt+j*tt:], ch*g*tt, dy[((i0+j)*ch+co)*hw:], p)
		}
	}
}

// products computes m[ξ] = u[ξ]·v[ξ] for the 16 values ξ: u [16][out][in]
// (p.pu packed), v [16][in][tiles], m [16][out][tiles].
func (p *winograd) products(m, v []float32, tiles, out, in int) {
	for xi := 0; xi < 16; xi++ {
		gemmSerialPacked(p.pu[xi], false, false, out, tiles, in, 1, p.u[xi*out*in:], in,
			v[xi*in*tiles:], tiles, 0, m[xi*out*tiles:], tiles)
	}
}

// out writes images [i0, i0+g) of dst, ch planes an image, from their
// tiles' products m ([16][ch][g·tiles]).
func (p *winograd) out(dst, m []float32, i0, g, ch int) {
	hw, tt := p.h*p.w, p.th*p.tw
	for j := 0; j < g; j++ {
		if p.small != nil {
			winogradOutSmall(dst[(i0+j)*ch*hw:], m[j*tt:], ch*g*tt, ch, g*tt, p)
			continue
		}
		for co := 0; co < ch; co++ {
			winogradOut(dst[((i0+j)*ch+co)*hw:], m[co*g*tt+j*tt:], ch*g*tt, p)
		}
	}
}

// addWeightGrad adds Gᵀ dU G, the weight transform's adjoint, for every
// kernel to grad [out][in][3][3], from du [16][out][in]; in float64.
func addWeightGrad(grad, du []float32, out, in int) {
	n := out * in
	for k := 0; k < n; k++ {
		var t [3][4]float64 // Gᵀ dU
		for j := 0; j < 4; j++ {
			d0, d1, d2, d3 := float64(du[j*n+k]), float64(du[(4+j)*n+k]), float64(du[(8+j)*n+k]), float64(du[(12+j)*n+k])
			t[0][j] = d0 + (d1+d2)/2
			t[1][j] = (d1 - d2) / 2
			t[2][j] = (d1+d2)/2 + d3
		}
		g := grad[k*9 : k*9+9]
		for r := 0; r < 3; r++ {
			g[r*3] += float32(t[r][0] + (t[r][1]+t[r][2])/2)
			g[r*3+1] += float32((t[r][1] - t[r][2]) / 2)
			g[r*3+2] += float32((t[r][1]+t[r][2])/2 + t[r][3])
		}
	}
}

// winogradInGo is winogradIn in plain Go, and its reference: the 16
// transformed values of each tile of the h×w plane x, tile (ty, tx) of
// value ξ at v[ξ·ld + ty·tw + tx]. Columns first, then rows, in the
// assembly's order, so the same bits.
func winogradInGo(v []float32, ld int, x []float32, p *winograd) {
	at := func(r, c int) float32 {
		if r < 0 || r >= p.h || c < 0 || c >= p.w {
			return 0
		}
		return x[r*p.w+c]
	}
	for ty := 0; ty < p.th; ty++ {
		for tx := 0; tx < p.tw; tx++ {
			var r [4][4]float32
			for i := 0; i < 4; i++ {
				y, x0 := 2*ty-1+i, 2*tx-1
				d0, d1, d2, d3 := at(y, x0), at(y, x0+1), at(y, x0+2), at(y, x0+3)
				r[i] = [4]float32{d0 - d2, d1 + d2, d2 - d1, d1 - d3}
			}
			o := ty*p.tw + tx
			for j := 0; j < 4; j++ {
				v[(0+j)*ld+o] = r[0][j] - r[2][j]
				v[(4+j)*ld+o] = r[1][j] + r[2][j]
				v[(8+j)*ld+o] = r[2][j] - r[1][j]
				v[(12+j)*ld+o] = r[1][j] - r[3][j]
			}
		}
	}
}

// winogradOutGo is winogradOut in plain Go, and its reference: the h×w
// plane y from the 16 products of each tile, value ξ of tile (ty, tx) at
// m[ξ·ld + ty·tw + tx]; the outputs of a ragged last tile row or column
// that fall off the map are dropped.
func winogradOutGo(y []float32, m []float32, ld int, p *winograd) {
	for ty := 0; ty < p.th; ty++ {
		for tx := 0; tx < p.tw; tx++ {
			o := ty*p.tw + tx
			var w [4][2]float32
			for i := 0; i < 4; i++ {
				m0, m1, m2, m3 := m[(4*i)*ld+o], m[(4*i+1)*ld+o], m[(4*i+2)*ld+o], m[(4*i+3)*ld+o]
				w[i] = [2]float32{m0 + m1 + m2, m1 - m2 - m3}
			}
			for b := 0; b < 2; b++ {
				set := func(a int, val float32) {
					if r, c := 2*ty+a, 2*tx+b; r < p.h && c < p.w {
						y[r*p.w+c] = val
					}
				}
				set(0, w[0][b]+w[1][b]+w[2][b])
				set(1, w[1][b]-w[2][b]-w[3][b])
			}
		}
	}
}

// winogradOutAdjGo is winogradOutAdj in plain Go, and its reference: the
// 16 values of A·dY·Aᵀ of each tile's 2×2 gradients of the h×w plane dy
// (zeros off the map), value ξ of tile (ty, tx) at mb[ξ·ld + ty·tw + tx].
func winogradOutAdjGo(mb []float32, ld int, dy []float32, p *winograd) {
	at := func(r, c int) float32 {
		if r >= p.h || c >= p.w {
			return 0
		}
		return dy[r*p.w+c]
	}
	for ty := 0; ty < p.th; ty++ {
		for tx := 0; tx < p.tw; tx++ {
			var e [2][4]float32
			for a := 0; a < 2; a++ {
				d0, d1 := at(2*ty+a, 2*tx), at(2*ty+a, 2*tx+1)
				e[a] = [4]float32{d0, d0 + d1, d0 - d1, -d1}
			}
			o := ty*p.tw + tx
			for j := 0; j < 4; j++ {
				mb[j*ld+o] = e[0][j]
				mb[(4+j)*ld+o] = e[0][j] + e[1][j]
				mb[(8+j)*ld+o] = e[0][j] - e[1][j]
				mb[(12+j)*ld+o] = -e[1][j]
			}
		}
	}
}
