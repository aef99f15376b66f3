//go:build !amd64 || purego

package nn

// fastKernel is nil without the assembly: gemmSerial uses gonum.
var fastKernel, fastKernel8 microKernel

const gemmKernelName = "gonum"

// fastDot is nil without the assembly.
var fastDot dotKernel

// addTo sets dst[i] += src[i] for every i of src.
func addTo(dst, src []float32) { addToGo(dst, src) }
