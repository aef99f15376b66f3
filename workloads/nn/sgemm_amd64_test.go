//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		archKernels["avx2"] = rowsKernel{kernelAVX2, mr}
		archDots["avx2"] = dotAVX2
		if cpu.X86.HasAVX512F {
			archKernels["avx512"] = rowsKernel{kernelAVX512, mr}
			archKernels["avx512x8"] = rowsKernel{kernel8AVX512, 8}
			archDots["avx512"] = dotAVX512
		}
	}
}
