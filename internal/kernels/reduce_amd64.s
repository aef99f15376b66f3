//go:build amd64 && !purego

#include "textflag.h"

// AVX2 loops for Reduce: func xxxAVX2(dst, src []byte) computes
// dst = dst op src over len(dst) bytes, a multiple of 64, one 64-byte block per
// iteration, with unaligned loads and stores. Results must be bit-identical to
// the Go loops in reduce.go, NaN payloads included; the comments on the body
// macros say how each one gets there.
//
// Registers:
//	all     DI dst, SI src, CX blocks left; AX scratch for constants
//	float32, float64, int32, int64 (32 bytes a step)
//	        Sum, Prod: Y0 dst, then the result
//	        Max, Min:  Y1 src, Y0 result, Y2 lanes where src is NaN
//	bfloat16 Sum (16 elements a step)
//	        Y0/Y1 dst/src words, then the odd elements and their sum;
//	        Y2/Y3 the even elements and their sum; Y4 rounding scratch;
//	        Y8 0xffff0000, Y9 1, Y10 0x7fff
//	float16 (the whole block at once)
//	        Y0-Y3 results for the four 8-element vectors; Y4, Y5 NaN test;
//	        Y6, Y7 NaN fix-up scratch; Y8 dst widened; Y9, Y10 Max/Min
//	        scratch; Y14 0x80000000, Y15 0x7fc00000

// LOOP runs BODY on each 64-byte block, as BODY(0) and BODY(32).
#define LOOP(BODY) \
loop: \
	BODY(0); \
	BODY(32); \
	ADDQ $64, DI; \
	ADDQ $64, SI; \
	DECQ CX; \
	JNZ  loop

// BROADCAST fills every dword of Y with c.
#define BROADCAST(c, X, Y) \
	MOVL         $c, AX; \
	VMOVD        AX, X; \
	VPBROADCASTD X, Y

// ARITH: dst = dst op src. dst is the first source operand, so when both are
// NaN the result is dst's NaN (quieted): what ADDSS/MULSS give for Go's
// dst[i] += src[i], which the compiler emits with dst as the destination
// (in a normal build; -race builds differ, see nanOrderOnly in the tests).
#define ARITH(op, off) \
	VMOVDQU off(DI), Y0; \
	op      off(SI), Y0, Y0; \
	VMOVDQU Y0, off(DI)

// SELECT: Go keeps dst unless src > dst (src < dst for Min) or src is NaN.
// VMAXPS returns its second operand unless the first is greater, so with src
// first it returns src only when src > dst, and dst on ties (+0 vs -0) and
// whenever either is NaN; the blend then takes src where src is NaN. Neither
// step changes a NaN's bits, just as Go's assignment does not.
// $3 is the predicate UNORD_Q: true where src is NaN.
#define SELECT(op, cmp, blend, off) \
	VMOVDQU off(SI), Y1; \
	op      off(DI), Y1, Y0; \
	cmp     $3, Y1, Y1, Y2; \
	blend   Y2, Y1, Y0, Y0; \
	VMOVDQU Y0, off(DI)

#define F32ADD(off) ARITH(VADDPS, off)
#define F32MUL(off) ARITH(VMULPS, off)
#define F32MAX(off) SELECT(VMAXPS, VCMPPS, VBLENDVPS, off)
#define F32MIN(off) SELECT(VMINPS, VCMPPS, VBLENDVPS, off)
#define F64ADD(off) ARITH(VADDPD, off)
#define F64MUL(off) ARITH(VMULPD, off)
#define F64MAX(off) SELECT(VMAXPD, VCMPPD, VBLENDVPD, off)
#define F64MIN(off) SELECT(VMINPD, VCMPPD, VBLENDVPD, off)
#define I32ADD(off) ARITH(VPADDD, off)
#define I64ADD(off) ARITH(VPADDQ, off)

// BF16ROUND rounds the float32 sums in R to nearest even at bfloat16
// precision, as reduceBFloat16 does: b + 0x7fff + (b>>16)&1, leaving the
// result in the top half. reduceBFloat16 instead gives a NaN b as
// (b>>16)|0x40, but for these sums that is the same: both addends are
// bfloat16 values (low halves zero) and x86 returns a NaN operand quieted or
// the default NaN 0xffc00000, so a NaN b has a zero low half, which the
// rounding carries nothing out of, and the quiet bit 0x40 already set.
// (TestReduceAllHalves checks this for every bfloat16 against NaNs.)
#define BF16ROUND(R) \
	VPSRLD $16, R, Y4; \
	VPAND  Y9, Y4, Y4; \
	VPADDD Y10, Y4, Y4; \
	VPADDD Y4, R, R

// BF16ADD: a bfloat16 is the top half of a float32, so rather than widening
// with shuffles (whose pack back works per 128-bit lane) the 16 elements are
// split by parity: a dword shifted left 16 is its even element as a float32,
// and masked with 0xffff0000 its odd one. Sums take dst first, as in Go.
#define BF16ADD(off) \
	VMOVDQU off(DI), Y0; \
	VMOVDQU off(SI), Y1; \
	VPSLLD  $16, Y0, Y2; \
	VPSLLD  $16, Y1, Y3; \
	VADDPS  Y3, Y2, Y2; \
	VPAND   Y8, Y0, Y0; \
	VPAND   Y8, Y1, Y1; \
	VADDPS  Y1, Y0, Y0; \
	BF16ROUND(Y2); \
	BF16ROUND(Y0); \
	VPSRLD  $16, Y2, Y2; \
	VPAND   Y8, Y0, Y0; \
	VPOR    Y2, Y0, Y0; \
	VMOVDQU Y0, off(DI)

// float16 works on a block as four vectors of 8 elements: COMBINE(R, off)
// widens the src and dst halves at off with VCVTPH2PS (exact), combines them
// into R, and F16LOOP narrows all four with VCVTPS2PH, which rounds to
// nearest even like Float32ToFloat16 (imm 0: RNE whatever MXCSR says).
//
// F16ARITH takes src as the first operand because in reduceFloat16 the
// compiler emits combine's a+b (a*b) as ADDSS into src's register; which
// comes first only shows when both are NaN, as the result's sign.
#define F16ARITH(op, R, off) \
	VCVTPH2PS off(SI), R; \
	VCVTPH2PS off(DI), Y8; \
	op        Y8, R, R

// F16SELECT is SELECT on the widened values.
#define F16SELECT(op, R, off) \
	VCVTPH2PS off(SI), R; \
	VCVTPH2PS off(DI), Y8; \
	op        Y8, R, Y9; \
	VCMPPS    $3, R, R, Y10; \
	VBLENDVPS Y10, R, Y9, R

#define F16ADD(R, off) F16ARITH(VADDPS, R, off)
#define F16MUL(R, off) F16ARITH(VMULPS, R, off)
#define F16MAX(R, off) F16SELECT(VMAXPS, R, off)
#define F16MIN(R, off) F16SELECT(VMINPS, R, off)

// F16CANON: Float32ToFloat16 makes every NaN sign|0x7e00, where VCVTPS2PH
// keeps the top of the payload, so a NaN lane of R becomes sign|0x7fc00000,
// which narrows to exactly sign|0x7e00.
#define F16CANON(R) \
	VCMPPS    $3, R, R, Y6; \
	VANDPS    Y14, R, Y7; \
	VORPS     Y15, Y7, Y7; \
	VBLENDVPS Y6, Y7, R, R

// F16LOOP: NaNs are rare, so rather than canonicalise every vector, one
// unordered compare of each pair of results (true where either is NaN) tells
// whether the block has any.
#define F16LOOP(COMBINE) \
loop: \
	COMBINE(Y0, 0); \
	COMBINE(Y1, 16); \
	COMBINE(Y2, 32); \
	COMBINE(Y3, 48); \
	VCMPPS    $3, Y0, Y1, Y4; \
	VCMPPS    $3, Y2, Y3, Y5; \
	VORPS     Y4, Y5, Y4; \
	VPTEST    Y4, Y4; \
	JNZ       nan; \
store: \
	VCVTPS2PH $0, Y0, 0(DI); \
	VCVTPS2PH $0, Y1, 16(DI); \
	VCVTPS2PH $0, Y2, 32(DI); \
	VCVTPS2PH $0, Y3, 48(DI); \
	ADDQ      $64, DI; \
	ADDQ      $64, SI; \
	DECQ      CX; \
	JNZ       loop; \
	JMP       done; \
nan: \
	F16CANON(Y0); \
	F16CANON(Y1); \
	F16CANON(Y2); \
	F16CANON(Y3); \
	JMP       store

// BLOCKS turns the byte count in CX into blocks, skipping to done if none.
// (The argument loads stay in each function so that vet can check them.)
#define BLOCKS \
	SHRQ $6, CX; \
	JZ   done

TEXT ·addF32AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F32ADD)
done:
	VZEROUPPER
	RET

TEXT ·mulF32AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F32MUL)
done:
	VZEROUPPER
	RET

TEXT ·maxF32AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F32MAX)
done:
	VZEROUPPER
	RET

TEXT ·minF32AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F32MIN)
done:
	VZEROUPPER
	RET

TEXT ·addF64AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F64ADD)
done:
	VZEROUPPER
	RET

TEXT ·mulF64AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F64MUL)
done:
	VZEROUPPER
	RET

TEXT ·maxF64AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F64MAX)
done:
	VZEROUPPER
	RET

TEXT ·minF64AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(F64MIN)
done:
	VZEROUPPER
	RET

TEXT ·addI32AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(I32ADD)
done:
	VZEROUPPER
	RET

TEXT ·addI64AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	LOOP(I64ADD)
done:
	VZEROUPPER
	RET

TEXT ·addBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	BROADCAST(0xffff0000, X8, Y8)
	BROADCAST(1, X9, Y9)
	BROADCAST(0x7fff, X10, Y10)
	LOOP(BF16ADD)
done:
	VZEROUPPER
	RET

// F16CONSTS loads the constants of F16CANON.
#define F16CONSTS \
	BROADCAST(0x80000000, X14, Y14); \
	BROADCAST(0x7fc00000, X15, Y15)

TEXT ·addF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	F16CONSTS
	F16LOOP(F16ADD)
done:
	VZEROUPPER
	RET

TEXT ·mulF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	F16CONSTS
	F16LOOP(F16MUL)
done:
	VZEROUPPER
	RET

TEXT ·maxF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	F16CONSTS
	F16LOOP(F16MAX)
done:
	VZEROUPPER
	RET

TEXT ·minF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	BLOCKS
	F16CONSTS
	F16LOOP(F16MIN)
done:
	VZEROUPPER
	RET

// func hasF16C() bool: CPUID leaf 1 reports F16C in bit 29 of ECX.
TEXT ·hasF16C(SB), NOSPLIT, $0-1
	MOVL  $1, AX
	XORL  CX, CX
	CPUID
	SHRL  $29, CX
	ANDL  $1, CX
	MOVB  CX, ret+0(FP)
	RET
