package nn

// gatherStride2Go is gatherStride2 in plain Go.
func gatherStride2Go(dst []float32, dstStride int, src []float32, srcStride, n, rows int) {
	if n <= 0 {
		return
	}
	for r := 0; r < rows; r++ {
		d := dst[r*dstStride : r*dstStride+n]
		s := src[r*srcStride : r*srcStride+2*n-1]
		for j := range d {
			d[j] = s[2*j]
		}
	}
}

// scatterAddStride2Go is scatterAddStride2 in plain Go.
func scatterAddStride2Go(dst []float32, dstStride int, src []float32, srcStride, n, rows int) {
	if n <= 0 {
		return
	}
	for r := 0; r < rows; r++ {
		d := dst[r*dstStride : r*dstStride+2*n-1]
		s := src[r*srcStride : r*srcStride+n]
		for j, v := range s {
			d[2*j] += v
		}
	}
}
