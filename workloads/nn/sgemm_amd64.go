//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// sgemmKernel6x16 is the AVX2/FMA micro-kernel in sgemm_amd64.s.
//
//go:noescape
func sgemmKernel6x16(k int, a, b *float32, ldb int, c *float32, ldc int, tiles int, store bool)

// sdotKernel4x3 is the AVX2/FMA dot-product kernel in sgemm_amd64.s.
//
//go:noescape
func sdotKernel4x3(k8 int, a *float32, lda int, b *float32, ldb int, out *float32)

// sdotKernel4x3z is its AVX-512 version in sdot_amd64.s.
//
//go:noescape
func sdotKernel4x3z(k int, a *float32, lda int, b *float32, ldb int, out *float32)

// fastDot is the kernel for A·Bᵀ, nil with fastKernel; AVX-512's where
// the micro-kernel is.
var fastDot = func() dotKernel {
	switch {
	case fastKernel == nil:
		return nil
	case cpu.X86.HasAVX512F:
		return dotAVX512
	}
	return dotAVX2
}()

// dotAVX512 checks the extents sdotKernel4x3z will touch, then calls it.
func dotAVX512(k int, a []float32, lda int, b []float32, ldb int, out *[dr * dc]float32) {
	if k == 0 {
		clear(out[:])
		return
	}
	_ = a[(dr-1)*lda+k-1]
	_ = b[(dc-1)*ldb+k-1]
	sdotKernel4x3z(k, &a[0], lda, &b[0], ldb, &out[0])
}

// dotAVX2 runs sdotKernel4x3 over the whole multiples of 8 (after checking
// the extents it will touch), then adds the rest in Go.
func dotAVX2(k int, a []float32, lda int, b []float32, ldb int, out *[dr * dc]float32) {
	k8 := k / 8
	if k8 == 0 {
		clear(out[:])
	} else {
		_ = a[(dr-1)*lda+k8*8-1]
		_ = b[(dc-1)*ldb+k8*8-1]
		sdotKernel4x3(k8, &a[0], lda, &b[0], ldb, &out[0])
	}
	dotTail(k8*8, k, a, lda, b, ldb, out)
}

//go:noescape
func vaddF32(dst, src *float32, n int)

// addTo sets dst[i] += src[i] for every i of src.
func addTo(dst, src []float32) {
	if len(src) == 0 {
		return
	}
	if fastKernel == nil {
		addToGo(dst, src)
		return
	}
	_ = dst[len(src)-1]
	vaddF32(&dst[0], &src[0], len(src))
}

// sgemmKernel6x16z is the AVX-512 micro-kernel in sgemm_amd64.s.
//
//go:noescape
func sgemmKernel6x16z(k int, a, b *float32, ldb int, c *float32, ldc int, tiles int, store bool)

// fastKernel is the micro-kernel gemmSerial runs: AVX-512 where the CPU
// and OS have it, AVX2/FMA else, nil without (cpu.X86 reports them only
// when the OS saves the ZMM or YMM state).
var fastKernel = func() microKernel {
	switch {
	case !cpu.X86.HasAVX2 || !cpu.X86.HasFMA:
		return nil
	case cpu.X86.HasAVX512F:
		return kernelAVX512
	}
	return kernelAVX2
}()

// gemmKernelName names the product gemmSerial runs, for benchmarks and logs.
var gemmKernelName = func() string {
	switch {
	case fastKernel == nil:
		return "gonum"
	case cpu.X86.HasAVX512F:
		return "avx512"
	}
	return "avx2-fma"
}()

// sgemmKernel8x16z is the 8-row AVX-512 micro-kernel in sgemm_amd64.s.
//
//go:noescape
func sgemmKernel8x16z(k int, a, b *float32, ldb int, c *float32, ldc int, tiles int, store bool)

// fastKernel8 is the 8-row micro-kernel (A packed in 8-row panels), where
// the CPU has AVX-512; nil elsewhere.
var fastKernel8 = func() microKernel {
	if fastKernel == nil || !cpu.X86.HasAVX512F {
		return nil
	}
	return kernel8AVX512
}()

// kernel8AVX512 checks the extents the assembly will touch, then calls it.
func kernel8AVX512(k int, a, b []float32, ldb int, c []float32, ldc int, tiles int, store bool) {
	_ = a[tiles*k*8-1]
	_ = b[(k-1)*ldb+nr-1]
	_ = c[(tiles*8-1)*ldc+nr-1]
	sgemmKernel8x16z(k, &a[0], &b[0], ldb, &c[0], ldc, tiles, store)
}

// kernelAVX512 checks the extents the assembly will touch, then calls it.
func kernelAVX512(k int, a, b []float32, ldb int, c []float32, ldc int, tiles int, store bool) {
	_ = a[tiles*k*mr-1]
	_ = b[(k-1)*ldb+nr-1]
	_ = c[(tiles*mr-1)*ldc+nr-1]
	sgemmKernel6x16z(k, &a[0], &b[0], ldb, &c[0], ldc, tiles, store)
}

// kernelAVX2 checks the extents the assembly will touch, then calls it.
func kernelAVX2(k int, a, b []float32, ldb int, c []float32, ldc int, tiles int, store bool) {
	_ = a[tiles*k*mr-1]
	_ = b[(k-1)*ldb+nr-1]
	_ = c[(tiles*mr-1)*ldc+nr-1]
	sgemmKernel6x16(k, &a[0], &b[0], ldb, &c[0], ldc, tiles, store)
}
