//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		archKernels["avx2"] = kernelAVX2
		archDots["avx2"] = dotAVX2
		if cpu.X86.HasAVX512F {
			archKernels["avx512"] = kernelAVX512
			archDots["avx512"] = dotAVX512
		}
	}
}
