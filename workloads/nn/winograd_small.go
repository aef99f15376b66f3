package nn

// Small maps (at most 64 floats and 16 tiles: ResNet's 7×7 and 8×8) put a
// whole plane's tiles in one register of 16 lanes instead of a tile row's
// few: the plane is loaded into four registers and each tile column the
// transforms need is gathered from them by two permutes under tables
// computed once per geometry (wgSmall), so a plane costs one pass of the
// transform instead of one per tile row at a quarter of the lanes.

// wgGather selects 16 lanes from 64 floats held in four registers, as the
// kernels' GATHER does: lane l is float idx[l] of the first pair where lo
// has bit l, float 32+idx[l] of the second where hi has it, zero where
// neither. The layout is the assembly's (72 bytes; TestWinogradSmallLayout).
type wgGather struct {
	idx    [16]int32
	lo, hi uint16
	_      uint32
}

// wgSmall is the tables of a small map: the input tiles' 16 columns d[i][j]
// from the plane, the output plane's four registers from the 2×2 outputs
// y[a][b] (held as y00, y01, y10, y11), the plane's lanes in its four
// registers, and the tiles' lanes. (A small map's dW is im2col's, so no
// table for the output's adjoint.)
type wgSmall struct {
	in    [16]wgGather
	out   [4]wgGather
	load  [4]uint16
	tiles uint16
	_     uint16
}

// smallFits reports whether an h×w map's tiles and plane fit wgSmall.
func smallFits(h, w int) bool { return h*w <= 64 && ((h+1)/2)*((w+1)/2) <= 16 }

// newSmall returns the tables of an h×w map (smallFits).
func newSmall(h, w int) *wgSmall {
	th, tw := (h+1)/2, (w+1)/2
	s := &wgSmall{}
	set := func(g *wgGather, l, src int) { // src: a float of the 64, or −1 for zero
		if src < 0 {
			return
		}
		g.idx[l] = int32(src % 32)
		if src < 32 {
			g.lo |= 1 << l
		} else {
			g.hi |= 1 << l
		}
	}
	at := func(r, c int) int {
		if r < 0 || r >= h || c < 0 || c >= w {
			return -1
		}
		return r*w + c
	}
	for ty := 0; ty < th; ty++ {
		for tx := 0; tx < tw; tx++ {
			l := ty*tw + tx
			s.tiles |= 1 << l
			for i := 0; i < 4; i++ {
				for j := 0; j < 4; j++ {
					set(&s.in[i*4+j], l, at(2*ty-1+i, 2*tx-1+j))
				}
			}
		}
	}
	for f := 0; f < h*w; f++ {
		r, c := f/w, f%w
		v := (r%2)*2 + c%2 // y00, y01, y10, y11
		set(&s.out[f/16], f%16, v*16+(r/2)*tw+c/2)
		s.load[f/16] |= 1 << (f % 16)
	}
	return s
}
