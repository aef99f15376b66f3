package nn

// im2col writes the [c·k·k, oh·ow] patch matrix of one c×h×w image into
// col, whose rows are ld apart: row (ci, ki, kj) holds, for every output
// position, the input pixel that kernel tap meets, or 0 in the padding.
func im2col(x []float32, c, h, w, k, s, pad, oh, ow int, col []float32, ld int) {
	p := oh * ow
	if s == 1 && pad == 0 {
		// Every tap is inside the image: straight row copies (LeNet).
		for ci := 0; ci < c; ci++ {
			xc := x[ci*h*w : (ci+1)*h*w]
			for ki := 0; ki < k; ki++ {
				for kj := 0; kj < k; kj++ {
					row := col[((ci*k+ki)*k+kj)*ld:]
					src := xc[ki*w+kj:]
					for oy := 0; oy < oh; oy++ {
						copy(row[oy*ow:oy*ow+ow], src[oy*w:])
					}
				}
			}
		}
		return
	}
	if s == 1 && oh == h && ow == w {
		imSame(x, c, h, w, k, pad, col, ld)
		return
	}
	r := 0
	for ci := 0; ci < c; ci++ {
		xc := x[ci*h*w : (ci+1)*h*w]
		for ki := 0; ki < k; ki++ {
			for kj := 0; kj < k; kj++ {
				row := col[r*ld : r*ld+p]
				r++
				// Output columns whose tap lands inside the row: the same
				// for every output row, so computed once.
				lo, hi := validRange(ow, w, s, pad, kj)
				off := lo*s - pad + kj // input column of output column lo
				if s == 2 {
					im2colStride2(xc, h, w, pad, ki, oh, ow, lo, hi, off, row)
					continue
				}
				for oy := 0; oy < oh; oy++ {
					dst := row[oy*ow : (oy+1)*ow]
					iy := oy*s - pad + ki
					if iy < 0 || iy >= h || lo >= hi {
						clear(dst)
						continue
					}
					if lo > 0 {
						clear(dst[:lo])
					}
					if hi < ow {
						clear(dst[hi:])
					}
					d := dst[lo:hi]
					if s == 1 {
						copy(d, xc[iy*w+off:])
						continue
					}
					// src[j·s] for every j of d, the bound checked once.
					src := xc[iy*w+off : iy*w+off+(len(d)-1)*s+1]
					for j := range d {
						d[j] = src[j*s]
					}
				}
			}
		}
	}
}

// imSame is im2col for a stride-1 convolution whose output is its input's
// size (ResNet's 3×3, padding 1): each patch row is the image shifted by
// (ki−pad)·w + kj−pad, so it is one long copy, after which the columns
// that wrapped round a row edge, and the rows off the top or bottom, are
// zeroed.
func imSame(x []float32, c, h, w, k, pad int, col []float32, ld int) {
	p := h * w
	for ci := 0; ci < c; ci++ {
		xc := x[ci*p : (ci+1)*p]
		for ki := 0; ki < k; ki++ {
			for kj := 0; kj < k; kj++ {
				row := col[((ci*k+ki)*k+kj)*ld : ((ci*k+ki)*k+kj)*ld+p]
				dy, dx := ki-pad, kj-pad
				// Output rows whose tap row lies inside the image.
				y0 := min(h, max(0, -dy))
				y1 := max(y0, min(h, h-dy))
				clear(row[:y0*w])
				clear(row[y1*w:])
				if y0 >= y1 {
					continue
				}
				// row[q] = xc[q+d] for q in [y0·w, y1·w), clipped to xc.
				d := dy*w + dx
				lo, hi := max(y0*w, -d), min(y1*w, p-d)
				if lo >= hi {
					clear(row[y0*w : y1*w])
					continue
				}
				copy(row[lo:hi], xc[lo+d:hi+d])
				clear(row[y0*w : lo])
				clear(row[hi : y1*w])
				zeroEdgeColumns(row, w, y0, y1, dx)
			}
		}
	}
}

// col2im is im2col's adjoint: it sums each patch-matrix entry (rows ld
// apart) back onto the input pixel it came from, overwriting x.
// It may zero entries of col that fall off the image.
func col2im(col []float32, ld, c, h, w, k, s, pad, oh, ow int, x []float32) {
	clear(x)
	p := oh * ow
	if s == 1 && oh == h && ow == w {
		col2imSame(col, ld, c, h, w, k, pad, x)
		return
	}
	if s == 1 && pad == 0 {
		for ci := 0; ci < c; ci++ {
			xc := x[ci*h*w : (ci+1)*h*w]
			for ki := 0; ki < k; ki++ {
				for kj := 0; kj < k; kj++ {
					row := col[((ci*k+ki)*k+kj)*ld:]
					dst := xc[ki*w+kj:]
					for oy := 0; oy < oh; oy++ {
						src := row[oy*ow : oy*ow+ow]
						d := dst[oy*w : oy*w+len(src)]
						for j, v := range src {
							d[j] += v
						}
					}
				}
			}
		}
		return
	}
	r := 0
	for ci := 0; ci < c; ci++ {
		xc := x[ci*h*w : (ci+1)*h*w]
		for ki := 0; ki < k; ki++ {
			for kj := 0; kj < k; kj++ {
				row := col[r*ld : r*ld+p]
				r++
				lo, hi := validRange(ow, w, s, pad, kj)
				if lo >= hi {
					continue
				}
				off := lo*s - pad + kj
				n := hi - lo
				if s == 2 {
					// The output rows whose tap row is inside the image, all
					// at once: rows 2w apart in x.
					oy0, oy1 := validRange(oh, h, 2, pad, ki) // rows whose tap row is in the image
					if oy0 < oy1 {
						iy0 := oy0*2 - pad + ki
						scatterAddStride2(xc[iy0*w+off:], 2*w, row[oy0*ow+lo:], ow, n, oy1-oy0)
					}
					continue
				}
				for oy := 0; oy < oh; oy++ {
					iy := oy*s - pad + ki
					if iy < 0 || iy >= h {
						continue
					}
					src := row[oy*ow+lo : oy*ow+lo+n]
					if s == 1 {
						d := xc[iy*w+off : iy*w+off+len(src)]
						for j, v := range src {
							d[j] += v
						}
						continue
					}
					d := xc[iy*w:]
					for j, ix := 0, off; j < len(src); j, ix = j+1, ix+s {
						d[ix] += src[j]
					}
				}
			}
		}
	}
}

// col2imSame is col2im for imSame's geometry: the entries whose tap column
// wrapped round a row edge are zeroed in col, then each patch row is added
// onto the image shifted, in one long vector add. Adding those zeros
// leaves every sum as the row-by-row loop makes it.
func col2imSame(col []float32, ld, c, h, w, k, pad int, x []float32) {
	p := h * w
	for ci := 0; ci < c; ci++ {
		xc := x[ci*p : (ci+1)*p]
		for ki := 0; ki < k; ki++ {
			for kj := 0; kj < k; kj++ {
				row := col[((ci*k+ki)*k+kj)*ld : ((ci*k+ki)*k+kj)*ld+p]
				dy, dx := ki-pad, kj-pad
				y0, y1 := max(0, -dy), min(h, h-dy)
				if y0 >= y1 {
					continue
				}
				zeroEdgeColumns(row, w, y0, y1, dx)
				d := dy*w + dx
				lo, hi := max(y0*w, -d), min(y1*w, p-d)
				if lo < hi {
					addTo(xc[lo+d:hi+d], row[lo:hi])
				}
			}
		}
	}
}

// zeroEdgeColumns zeroes, in rows [y0, y1) of a w-wide patch row, the
// output columns whose tap column (ox + dx) is off the image: none when dx
// is 0 (a third of the taps), else one short run a row.
func zeroEdgeColumns(row []float32, w, y0, y1, dx int) {
	var lo, hi int
	switch {
	case dx < 0:
		lo, hi = 0, min(w, -dx)
	case dx > 0:
		lo, hi = max(0, w-dx), w
	default:
		return
	}
	row = row[:y1*w]
	if hi-lo == 1 {
		// A 3×3's run of one: a store every w floats, the bound checked
		// by the loop condition alone.
		for q := y0*w + lo; q < len(row); q += w {
			row[q] = 0
		}
		return
	}
	for q := y0 * w; q < y1*w; q += w {
		clear(row[q+lo : q+hi])
	}
}

// im2colStride2 writes one patch row (kernel tap row ki, tap columns
// valid over output columns [lo, hi), the first reading input column off)
// of a stride-2 convolution: the rows off the image cleared, the others
// gathered every other float in one call.
func im2colStride2(xc []float32, h, w, pad, ki, oh, ow, lo, hi, off int, row []float32) {
	oy0, oy1 := validRange(oh, h, 2, pad, ki) // rows whose tap row is in the image
	if lo >= hi || oy0 >= oy1 {
		clear(row[:oh*ow])
		return
	}
	clear(row[:oy0*ow])
	clear(row[oy1*ow : oh*ow])
	// The columns off the left or right edge: at most a float or two a
	// row for a 3×3, stored directly (clear would be a call a row).
	for oy := oy0; oy < oy1; oy++ {
		r := row[oy*ow : (oy+1)*ow]
		for x := 0; x < lo; x++ {
			r[x] = 0
		}
		for x := hi; x < len(r); x++ {
			r[x] = 0
		}
	}
	iy0 := oy0*2 - pad + ki
	gatherStride2(row[oy0*ow+lo:], ow, xc[iy0*w+off:], 2*w, hi-lo, oy1-oy0)
}

// validRange is the range [lo, hi) of output columns ox for which the input
// column ox·s − pad + kj lies in [0, w).
func validRange(ow, w, s, pad, kj int) (lo, hi int) {
	// ox·s ≥ pad − kj  and  ox·s ≤ w − 1 + pad − kj
	lo = 0
	if d := pad - kj; d > 0 {
		lo = (d + s - 1) / s
	}
	hi = ow
	if top := w - 1 + pad - kj; top < 0 {
		hi = 0
	} else {
		hi = min(ow, top/s+1)
	}
	if lo > hi {
		lo = hi
	}
	return lo, hi
}

// tapMasks describes, for a stride-1 convolution whose output is its
// input's size, where each kernel tap lands: patch row t of an image is
// the image shifted by d[t] = (ki−pad)·w + kj−pad, with the output
// positions whose tap falls off the image (a row edge, the top or bottom)
// zero. bits holds that as 16-lane masks, blocks of them per tap: bit l
// of bits[t·blocks + b] is set when position 16b + l (< p) takes a pixel.
// last masks an image's last block to the positions below p.
type tapMasks struct {
	h, w, k, pad int
	p, blocks    int
	d            []int
	bits         []uint16
	last         uint16
}

// newTapMasks returns m if it already describes this geometry, else a
// new one.
func newTapMasks(m *tapMasks, h, w, k, pad int) *tapMasks {
	if m != nil && m.h == h && m.w == w && m.k == k && m.pad == pad {
		return m
	}
	p := h * w
	blocks := (p + 15) / 16
	m = &tapMasks{h: h, w: w, k: k, pad: pad, p: p, blocks: blocks,
		d: make([]int, k*k), bits: make([]uint16, k*k*blocks)}
	m.last = uint16(1<<(p-16*(blocks-1)) - 1)
	for ki := 0; ki < k; ki++ {
		for kj := 0; kj < k; kj++ {
			t, dy, dx := ki*k+kj, ki-pad, kj-pad
			m.d[t] = dy*w + dx
			for q := 0; q < p; q++ {
				iy, ix := q/w+dy, q%w+dx
				if iy >= 0 && iy < h && ix >= 0 && ix < w {
					m.bits[t*blocks+q/16] |= 1 << (q % 16)
				}
			}
		}
	}
	return m
}

// unfold writes the patch rows of channels [c0, c1) of g images into col
// (rows g·p long, the images side by side), from x, the first image's
// planes, images inSize floats apart: im2colShift a row at a time.
func (m *tapMasks) unfold(col, x []float32, c0, c1, inSize, g int) {
	kk, ld := m.k*m.k, g*m.p
	for ci := c0; ci < c1; ci++ {
		for t := 0; t < kk; t++ {
			m.im2colShift(col[((ci-c0)*kk+t)*ld:], x[ci*m.p:], inSize, t, g)
		}
	}
}

// fold is unfold's adjoint, overwriting channels [c0, c1) of the g images
// in dx with the sums of their patch rows in col (rows ld apart). The
// centre tap lands every pixel on itself, so it is copied over dx rather
// than added to a cleared dx; the other taps are added after it.
func (m *tapMasks) fold(dx, col []float32, ld, c0, c1, inSize, g int) {
	kk, mid := m.k*m.k, m.k*m.k/2
	for ci := c0; ci < c1; ci++ {
		row := col[((ci-c0)*kk+mid)*ld:]
		for j := 0; j < g; j++ {
			copy(dx[j*inSize+ci*m.p:j*inSize+(ci+1)*m.p], row[j*m.p:])
		}
		for t := 0; t < kk; t++ {
			if t != mid {
				m.col2imShift(dx[ci*m.p:], col[((ci-c0)*kk+t)*ld:], inSize, t, g)
			}
		}
	}
}
