//go:build !amd64 || purego

package nn

// fastKernel is nil without the assembly: gemmSerial uses gonum.
var fastKernel microKernel

const gemmKernelName = "gonum"

// fastDot is nil without the assembly.
var fastDot dotKernel
