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
