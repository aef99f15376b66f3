// Macros shared by this package's element-wise and batch-norm kernels
// (bnkern_amd64.s, bnrelu_amd64.s, elemkern_amd64.s).

// LANETREE adds the four 4-lane float64 accumulators a, b, c, d as
// (a+b)+(c+d), then the lanes l of the result as (l0+l2)+(l1+l3), into the
// low lane of a (bnkern.go's laneTree). t is a scratch register; xa and xt
// are a's and t's 128-bit names.
#define LANETREE(a, b, c, d, xa, xt) \
	VADDPD       b, a, a  \
	VADDPD       d, c, c  \
	VADDPD       c, a, a  \
	VEXTRACTF128 $1, a, xt \
	VADDPD       xt, xa, xa \
	VUNPCKHPD    xa, xa, xt \
	VADDSD       xt, xa, xa

// DOTSACC adds the four g lanes in Y8 (float64) to acc and their products
// with the four x lanes at off(DI) minus the mean (Y15) to accx; Y9 is
// scratch. bnDots' step, whatever g was loaded from.
#define DOTSACC(off, acc, accx) \
	VCVTPS2PD off(DI), Y9   \
	VSUBPD    Y15, Y9, Y9   \
	VADDPD    Y8, acc, acc  \
	VMULPD    Y9, Y8, Y8    \
	VADDPD    Y8, accx, accx

// RELU8 sets reg = max(reg, 0) as Go's max does, Y15 holding zeros:
// VMAXPS returns its second source (reg) for a NaN or two zeros, and
// adding +0 turns −0 into +0 and leaves every other value as it is.
#define RELU8(reg) \
	VMAXPS reg, Y15, reg \
	VADDPS Y15, reg, reg
