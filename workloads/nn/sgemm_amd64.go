//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// sgemmKernel6x16 is the AVX2/FMA micro-kernel in sgemm_amd64.s.
//
//go:noescape
func sgemmKernel6x16(k int, a, b *float32, ldb int, c *float32, ldc int)

// fastKernel is the micro-kernel gemmSerial runs, nil where the CPU lacks
// AVX2 or FMA (cpu.X86 reports them only when the OS saves the YMM state).
var fastKernel = func() microKernel {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		return nil
	}
	return kernelAVX2
}()

// gemmKernelName names the product gemmSerial runs, for benchmarks and logs.
var gemmKernelName = map[bool]string{true: "avx2-fma", false: "gonum"}[fastKernel != nil]

// kernelAVX2 checks the extents the assembly will touch, then calls it.
func kernelAVX2(k int, a, b []float32, ldb int, c []float32, ldc int) {
	_ = a[k*mr-1]
	_ = b[(k-1)*ldb+nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	sgemmKernel6x16(k, &a[0], &b[0], ldb, &c[0], ldc)
}
