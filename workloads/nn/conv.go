package nn

import (
	"fmt"
	"math/rand/v2"
)

// Conv2d is a 2-D convolution over NCHW input with a square kernel, as
// torch.nn.Conv2d(in, out, k, stride, padding, bias).
//
// Images are unfolded (im2col) into a [InC·K·K, G·OH·OW] matrix, G images
// side by side so that GEMM rows are at least a few hundred floats long
// even for small feature maps, and multiplied by the [OutC, InC·K·K] weight
// with the float32 GEMM (gemm.go). The matrix is never whole: it is built a
// few channels' rows at a time (colChunkBytes), each chunk multiplied while
// it is still in cache, and rebuilt the same way in Backward. The batch is
// split across Ctx.Workers goroutines, each with its own scratch, so
// products run serially inside each worker. A 3×3 convolution that keeps
// the map's size (ResNet's) runs through Winograd's F(2×2, 3×3) instead
// where winogradFits says it pays (winograd.go).
type Conv2d struct {
	InC, OutC, K, Stride, Pad int
	Weight                    *Param // [OutC, InC, K, K]
	Bias                      *Param // [OutC], nil without bias
	WeightInit                InitKind
	// NoInputGrad skips the input gradient, for a net's first layer, whose
	// input is data.
	NoInputGrad bool

	x, out, dx *Tensor
	oh, ow     int
	group      int // images per GEMM
	ws         []convScratch
	// The weights packed for the products, once a pass for all groups:
	// W's rows of each chunk of packCC channels (pw, forward) and their
	// transpose (pwT, dcol = Wᵀ·dY).
	pw, pwT [][]float32
	packCC  int
	// shift holds where each tap lands when the patch rows are built and
	// folded back by the shifted-row kernels (a stride-1 convolution that
	// keeps the map's size, with the assembly); nil otherwise.
	shift *tapMasks
	// wino is the F(2×2, 3×3) plan of a same-size 3×3 convolution
	// (winograd.go), which then runs both passes; nil where im2col's.
	wino *winograd
}

// colChunkBytes bounds the patch rows unfolded at a time: whole channels'
// rows, as many as fit, so that a chunk, written by im2col and read at once
// by the products, stays in a core's L2 (1 MiB here) beside the product's
// other operands. Keeping the whole unfolded batch from Forward to
// Backward instead (up to 16 MB a layer, as this package did) made a
// ResNet-20 step slower, not faster: the matrix went to memory and back
// (docs/notes/compute.md).
var colChunkBytes = 256 << 10

// minGEMMCols is the row length below which images are grouped into one
// product: the kernels run rows of this length near their peak, while an
// 8×8 map alone (64 floats) spends much of its time on tile edges. 784
// rather than 192: the dW dot products are k long, and ResNet-20's step
// takes 7–9% less CPU with 16 of its 7×7 maps a group than with 4 (LeNet
// the same within noise; docs/notes/compute.md).
var minGEMMCols = 784

type convScratch struct {
	col, dcol []float32 // one chunk of a group's unfolded input and its gradient
	wv, wm    []float32 // a Winograd group's transformed maps and products
	du        []float32 // Winograd dW partial sums of workers other than 0
	y, dy     []float32 // one group's output and output gradient, [OutC, G·P]
	dw, db    []float32 // partial gradients of workers other than 0
}

// NewConv2d returns a convolution whose parameters are named name+".weight"
// and name+".bias".
func NewConv2d(name string, in, out, k, stride, pad int, bias bool) *Conv2d {
	if in <= 0 || out <= 0 || k <= 0 || stride <= 0 || pad < 0 {
		panic(fmt.Sprintf("nn: NewConv2d(%q, %d, %d, %d, %d, %d): bad geometry", name, in, out, k, stride, pad))
	}
	c := &Conv2d{InC: in, OutC: out, K: k, Stride: stride, Pad: pad,
		Weight: newParam(name+".weight", out, in, k, k)}
	if bias {
		c.Bias = newParam(name+".bias", out)
	}
	return c
}

// OutSize is the output height (or width) for an input of size h.
func (c *Conv2d) OutSize(h int) int { return ConvOut(h, c.K, c.Stride, c.Pad) }

// ConvOut is the output size of a convolution or pooling window of size k
// with the given stride and padding over an input of size h.
func ConvOut(h, k, stride, pad int) int { return (h+2*pad-k)/stride + 1 }

func (c *Conv2d) Params() []*Param {
	if c.Bias == nil {
		return []*Param{c.Weight}
	}
	return []*Param{c.Weight, c.Bias}
}

func (c *Conv2d) Init(rng *rand.Rand) {
	fanIn, fanOut := c.InC*c.K*c.K, c.OutC*c.K*c.K
	initWeight(c.WeightInit, rng, c.Weight.Data, fanIn, fanOut)
	if c.Bias != nil {
		uniform(rng, c.Bias.Data, 1/sqrt(float64(fanIn)))
	}
}

// direct reports whether a lone image's unfolded input is the image itself.
func (c *Conv2d) direct() bool { return c.K == 1 && c.Stride == 1 && c.Pad == 0 && c.group == 1 }

// groups is the number of image groups in a batch of n.
func (c *Conv2d) groups(n int) int { return (n + c.group - 1) / c.group }

func (c *Conv2d) Forward(ctx *Ctx, x *Tensor) *Tensor {
	n, h, w := dims4("Conv2d", x, c.InC)
	oh, ow := c.OutSize(h), c.OutSize(w)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn: Conv2d %s: input %v too small for kernel %d", c.Weight.Name, x.Shape, c.K))
	}
	c.x, c.oh, c.ow = x, oh, ow
	c.out = ensure(c.out, n, c.OutC, oh, ow)
	p, kd, kk := oh*ow, c.InC*c.K*c.K, c.K*c.K
	c.group = max(1, min(n, (minGEMMCols+p-1)/p))
	if c.winogradFits(h, w) {
		c.wino = newWinograd(c.wino, h, w) // reused while the map holds
	} else {
		c.wino = nil
	}
	// The shifted rows serve im2col, which a small map's Winograd dW keeps.
	if useShiftAsm && c.Stride == 1 && oh == h && ow == w && !c.direct() && (c.wino == nil || c.wino.small != nil) {
		c.shift = newTapMasks(c.shift, h, w, c.K, c.Pad) // reused while the geometry holds
	} else {
		c.shift = nil
	}
	if c.wino != nil {
		c.winogradPass(ctx, c.out.Data, x.Data, n, c.InC, c.OutC, false)
		return c.out
	}
	wts := c.Weight.Data
	ng := c.groups(n)
	c.scratch(splits(ctx.workers(), ng))
	c.packCC = c.chunk(c.group * p)
	c.pw = c.packWeights(c.pw, false, c.packCC)
	parallel(ctx.workers(), ng, func(wk, lo, hi int) {
		sc := &c.ws[wk]
		for gi := lo; gi < hi; gi++ {
			i0, g := gi*c.group, min(c.group, n-gi*c.group)
			cols := g * p
			// One image writes straight into the output; a group computes
			// [OutC, G·P] and scatters it to NCHW.
			y, ldy := c.out.Data[i0*c.OutC*p:(i0+1)*c.OutC*p], p
			if g > 1 {
				sc.y = grow(sc.y, c.OutC*cols)
				y, ldy = sc.y, cols
			}
			var beta float32
			if c.Bias != nil {
				for o, b := range c.Bias.Data {
					fill(y[o*ldy:o*ldy+cols], b)
				}
				beta = 1
			}
			// Y = Σ over channel chunks of W[:, chunk]·col[chunk]: each
			// chunk's patch rows are unfolded into a cache-sized buffer
			// just before the product reads them.
			cc := c.chunk(cols)
			for c0 := 0; c0 < c.InC; c0 += cc {
				c1 := min(c.InC, c0+cc)
				col := c.unfold(x, i0, g, c0, c1, sc)
				gemmSerialPacked(c.packed(c.pw, cc, c0), false, false, c.OutC, cols, (c1-c0)*kk, 1, wts[c0*kk:], kd, col, cols, beta, y, ldy)
				beta = 1
			}
			if g > 1 {
				for j := 0; j < g; j++ {
					dst := c.out.Data[(i0+j)*c.OutC*p : (i0+j+1)*c.OutC*p]
					for o := 0; o < c.OutC; o++ {
						copy(dst[o*p:(o+1)*p], y[o*ldy+j*p:])
					}
				}
			}
		}
	})
	return c.out
}

func (c *Conv2d) Backward(ctx *Ctx, dy *Tensor) *Tensor {
	if c.x == nil {
		panic("nn: Conv2d.Backward before Forward")
	}
	x := c.x
	n, h, w := dims4("Conv2d", x, c.InC)
	p, kd, kk, inSize, outSize := c.oh*c.ow, c.InC*c.K*c.K, c.K*c.K, c.InC*h*w, c.OutC*c.oh*c.ow
	if len(dy.Data) != n*outSize {
		panic(fmt.Sprintf("nn: Conv2d %s: gradient shape %v, want %v", c.Weight.Name, dy.Shape, c.out.Shape))
	}
	if !c.NoInputGrad {
		c.dx = ensure(c.dx, x.Shape...)
	}
	if c.wino != nil && c.wino.small == nil {
		c.winogradBackward(ctx, dy.Data, n)
		ctx.Ready(c.Weight, c.Bias)
		if c.NoInputGrad {
			return nil
		}
		return c.dx
	}
	wts := c.Weight.Data
	ng := c.groups(n)
	nw := splits(ctx.workers(), ng)
	c.scratch(nw)
	if !c.NoInputGrad && !c.direct() && c.wino == nil {
		c.packCC = c.chunk(c.group * p)
		c.pwT = c.packWeights(c.pwT, true, c.packCC)
	}
	parallel(ctx.workers(), ng, func(wk, lo, hi int) {
		sc := &c.ws[wk]
		gw, gb := c.Weight.Grad, []float32(nil)
		if c.Bias != nil {
			gb = c.Bias.Grad
		}
		if wk > 0 {
			// Other workers sum into private buffers, added in worker order
			// below, so the result does not depend on scheduling.
			sc.dw = grow(sc.dw, len(gw))
			clear(sc.dw)
			gw = sc.dw
			if gb != nil {
				sc.db = grow(sc.db, len(gb))
				clear(sc.db)
				gb = sc.db
			}
		}
		for gi := lo; gi < hi; gi++ {
			i0, g := gi*c.group, min(c.group, n-gi*c.group)
			cols := g * p
			// The group's output gradient as [OutC, G·P].
			gy := dy.Data[i0*outSize : (i0+1)*outSize]
			if g > 1 {
				sc.dy = grow(sc.dy, c.OutC*cols)
				for j := 0; j < g; j++ {
					src := dy.Data[(i0+j)*outSize : (i0+j+1)*outSize]
					for o := 0; o < c.OutC; o++ {
						copy(sc.dy[o*cols+j*p:o*cols+(j+1)*p], src[o*p:])
					}
				}
				gy = sc.dy
			}
			if gb != nil {
				for o := range gb {
					gb[o] += sum32(gy[o*cols : (o+1)*cols])
				}
			}
			if c.direct() {
				// dW += dY·xᵀ, dx = Wᵀ·dY, on the image itself.
				col := x.Data[i0*inSize : (i0+1)*inSize]
				gemmSerial(false, true, c.OutC, kd, cols, 1, gy, cols, col, cols, 1, gw, kd)
				if !c.NoInputGrad {
					gemmSerial(true, false, kd, p, c.OutC, 1, wts, kd, gy, p, 0, c.dx.Data[i0*inSize:(i0+1)*inSize], p)
				}
				continue
			}
			// Channel chunk by chunk, the patch rows rebuilt into a
			// cache-sized buffer: dW[:, chunk] += dY·col[chunk]ᵀ, then
			// dcol = W[:, chunk]ᵀ·dY folded back onto the chunk's channels.
			cc := c.chunk(cols)
			for c0 := 0; c0 < c.InC; c0 += cc {
				c1 := min(c.InC, c0+cc)
				rows := (c1 - c0) * kk
				col := c.unfold(x, i0, g, c0, c1, sc)
				gemmSerial(false, true, c.OutC, rows, cols, 1, gy, cols, col, cols, 1, gw[c0*kk:], kd)
				if c.NoInputGrad || c.wino != nil {
					continue
				}
				sc.dcol = grow(sc.dcol, rows*cols)
				gemmSerialPacked(c.packed(c.pwT, cc, c0), true, false, rows, cols, c.OutC, 1, wts[c0*kk:], kd, gy, cols, 0, sc.dcol, cols)
				if c.shift != nil {
					c.shift.fold(c.dx.Data[i0*inSize:], sc.dcol, cols, c0, c1, inSize, g)
					continue
				}
				for j := 0; j < g; j++ {
					dxj := c.dx.Data[(i0+j)*inSize+c0*h*w : (i0+j)*inSize+c1*h*w]
					col2im(sc.dcol[j*p:], cols, c1-c0, h, w, c.K, c.Stride, c.Pad, c.oh, c.ow, dxj)
				}
			}
		}
	})
	for wk := 1; wk < nw; wk++ {
		axpy(1, c.ws[wk].dw, c.Weight.Grad)
		if c.Bias != nil {
			axpy(1, c.ws[wk].db, c.Bias.Grad)
		}
	}
	ctx.Ready(c.Weight, c.Bias)
	if c.NoInputGrad {
		return nil
	}
	if c.wino != nil {
		// A small map's dX through Winograd, its dW im2col's above (at
		// 16 tiles an image, dU's dot products are too short to pay).
		c.winogradPass(ctx, c.dx.Data, dy.Data, n, c.OutC, c.InC, true)
	}
	return c.dx
}

func (c *Conv2d) scratch(workers int) {
	if len(c.ws) < workers {
		c.ws = append(c.ws, make([]convScratch, workers-len(c.ws))...)
	}
}

// packWeights packs, for each chunk of cc channels, W's columns of that
// chunk as the forward product's A (OutC × rows), or, with trans, as dcol's
// Aᵀ (rows × OutC); nil entries where the product would not use them.
func (c *Conv2d) packWeights(dst [][]float32, trans bool, cc int) [][]float32 {
	kk, kd := c.K*c.K, c.InC*c.K*c.K
	n := (c.InC + cc - 1) / cc
	if len(dst) < n {
		dst = append(dst, make([][]float32, n-len(dst))...)
	}
	for i := 0; i < n; i++ {
		c0 := i * cc
		rows, w := (min(c.InC, c0+cc)-c0)*kk, c.Weight.Data[c0*kk:]
		if trans {
			dst[i] = packForGemm(dst[i], true, false, rows, c.OutC, 1, w, kd)
		} else {
			dst[i] = packForGemm(dst[i], false, false, c.OutC, rows, 1, w, kd)
		}
	}
	return dst[:n]
}

// packed is the packed weights of the chunk of cc channels from c0, nil
// when the chunks were packed another size (a ragged last group's).
func (c *Conv2d) packed(pw [][]float32, cc, c0 int) []float32 {
	if cc != c.packCC {
		return nil
	}
	return pw[c0/cc]
}

// chunk is the number of input channels whose patch rows, cols long, are
// unfolded at a time: as many as fit colChunkBytes, at least one; all of
// them when the image is its own unfolded matrix.
func (c *Conv2d) chunk(cols int) int {
	if c.direct() {
		return c.InC
	}
	cc := max(1, min(c.InC, colChunkBytes/(c.K*c.K*cols*4)))
	if cc > 8 && cc < c.InC {
		// Whole 8-row tiles for dcol's product (cc·K·K rows): 9 channels
		// of a 3×3 make 81 rows, padded to 84 for the 6-row kernel; 8
		// make 72, the 8-row kernel's without padding.
		cc &^= 7
	}
	return cc
}

// unfold returns the [(c1−c0)·K·K, g·P] im2col rows of channels [c0, c1)
// of images [i0, i0+g), in sc.col: the image itself for a lone image under
// a 1×1 stride-1 unpadded kernel.
func (c *Conv2d) unfold(x *Tensor, i0, g, c0, c1 int, sc *convScratch) []float32 {
	h, w := x.Shape[2], x.Shape[3]
	inSize, p, hw := c.InC*h*w, c.oh*c.ow, h*w
	if c.direct() {
		return x.Data[i0*inSize : (i0+1)*inSize]
	}
	rows := (c1 - c0) * c.K * c.K
	sc.col = grow(sc.col, rows*g*p)
	if c.shift != nil {
		c.shift.unfold(sc.col, x.Data[i0*inSize:], c0, c1, inSize, g)
		return sc.col
	}
	for j := 0; j < g; j++ {
		xj := x.Data[(i0+j)*inSize+c0*hw : (i0+j)*inSize+c1*hw]
		im2col(xj, c1-c0, h, w, c.K, c.Stride, c.Pad, c.oh, c.ow, sc.col[j*p:], g*p)
	}
	return sc.col
}
