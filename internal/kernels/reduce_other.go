//go:build !amd64 || purego

package kernels

import "github.com/distbench/distbench/collective"

// Without vector kernels every reduction runs the Go loops in reduce.go.

const kernelName = "none"

func hasKernel(collective.DType, collective.Op) bool { return false }

func reduceSIMD(collective.DType, collective.Op, []byte, []byte) bool { return false }

// Name names the vector code [Reduce] runs on this machine:
// here none, "go" for the plain loops.
func Name() string { return "go" }
