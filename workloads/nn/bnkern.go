package nn

// Batch norm's per-channel passes as kernels with a fixed summation shape,
// so that the assembly (bnkern_amd64.s) and the Go here give the same bits:
// sums run in float64 over 16 lanes (lane r takes the elements l ≡ r mod 16
// of the whole 16-element blocks, in order), the lanes are added in the tree
// laneTree spells out, then the leftover elements in order. The element-wise
// passes round each product and sum separately, as the assembly does
// (explicit conversions stop Go from fusing them).

// laneTree adds 16 lanes as the assembly does: four 4-lane vectors as
// (v0+v1)+(v2+v3), then the four lanes of the result as (l0+l2)+(l1+l3).
func laneTree(a *[16]float64) float64 {
	var v [4]float64
	for q := range v {
		v[q] = (a[q] + a[4+q]) + (a[8+q] + a[12+q])
	}
	return (v[0] + v[2]) + (v[1] + v[3])
}

// bnSumsGo returns Σ(x−mean) and Σ(x−mean)².
func bnSumsGo(x []float32, mean float64) (s, ss float64) {
	var a, b [16]float64
	n16 := len(x) / 16 * 16
	for i := 0; i < n16; i += 16 {
		for r, v := range x[i : i+16] {
			d := float64(v) - mean
			a[r] += d
			b[r] += float64(d * d)
		}
	}
	return bnSumsTail(x[n16:], mean, laneTree(&a), laneTree(&b))
}

func bnSumsTail(x []float32, mean, s, ss float64) (float64, float64) {
	for _, v := range x {
		d := float64(v) - mean
		s += d
		ss += float64(d * d)
	}
	return s, ss
}

// bnDotsGo returns Σg and Σg·(x−mean) over len(g) elements.
func bnDotsGo(g, x []float32, mean float64) (sg, sgx float64) {
	x = x[:len(g)]
	var a, b [16]float64
	n16 := len(g) / 16 * 16
	for i := 0; i < n16; i += 16 {
		for r, v := range g[i : i+16] {
			gv := float64(v)
			a[r] += gv
			b[r] += float64(gv * (float64(x[i+r]) - mean))
		}
	}
	return bnDotsTail(g[n16:], x[n16:], mean, laneTree(&a), laneTree(&b))
}

func bnDotsTail(g, x []float32, mean, sg, sgx float64) (float64, float64) {
	for i, v := range g {
		gv := float64(v)
		sg += gv
		sgx += float64(gv * (float64(x[i]) - mean))
	}
	return sg, sgx
}

// bnAffineGo sets dst = x·scale + shift over len(x) elements.
func bnAffineGo(dst, x []float32, scale, shift float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = float32(v*scale) + shift
	}
}

// bnBackGo sets dst = (a·g + b·x) + c over len(g) elements.
func bnBackGo(dst, g, x []float32, a, b, c float32) {
	dst, x = dst[:len(g)], x[:len(g)]
	for i, v := range g {
		dst[i] = (float32(a*v) + float32(b*x[i])) + c
	}
}
