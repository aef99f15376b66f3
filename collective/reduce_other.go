//go:build !amd64 || purego

package collective

// Without vector kernels every reduction runs the Go loops in reduce.go.

const kernelName = "none"

func hasKernel(DType, Op) bool { return false }

func reduceSIMD(DType, Op, []byte, []byte) bool { return false }

// ReduceKernels names the vector code [ReduceInto] runs on this machine:
// here none, "go" for the plain loops.
func ReduceKernels() string { return "go" }
