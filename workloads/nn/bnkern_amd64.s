//go:build amd64 && !purego

#include "textflag.h"

#include "kern_amd64.h"

// func bnSumsAVX2(x *float32, n int, mean float64) (s, ss float64)
//
// Σ(x−mean) and Σ(x−mean)² over n blocks of 16 floats, in float64: Y0..Y3
// and Y4..Y7 hold lanes 0–3, 4–7, 8–11, 12–15 of the two sums.
TEXT ·bnSumsAVX2(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mean+16(FP), Y15
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	VXORPD       Y6, Y6, Y6
	VXORPD       Y7, Y7, Y7

sums:
	TESTQ     CX, CX
	JEQ       sumsdone
	VCVTPS2PD (SI), Y8
	VCVTPS2PD 16(SI), Y9
	VCVTPS2PD 32(SI), Y10
	VCVTPS2PD 48(SI), Y11
	VSUBPD    Y15, Y8, Y8
	VSUBPD    Y15, Y9, Y9
	VSUBPD    Y15, Y10, Y10
	VSUBPD    Y15, Y11, Y11
	VADDPD    Y8, Y0, Y0
	VADDPD    Y9, Y1, Y1
	VADDPD    Y10, Y2, Y2
	VADDPD    Y11, Y3, Y3
	VMULPD    Y8, Y8, Y8
	VMULPD    Y9, Y9, Y9
	VMULPD    Y10, Y10, Y10
	VMULPD    Y11, Y11, Y11
	VADDPD    Y8, Y4, Y4
	VADDPD    Y9, Y5, Y5
	VADDPD    Y10, Y6, Y6
	VADDPD    Y11, Y7, Y7
	ADDQ      $64, SI
	DECQ      CX
	JMP       sums

sumsdone:
	LANETREE(Y0, Y1, Y2, Y3, X0, X8)
	LANETREE(Y4, Y5, Y6, Y7, X4, X8)
	VMOVSD X0, s+24(FP)
	VMOVSD X4, ss+32(FP)
	VZEROUPPER
	RET

// DOTS4 adds the four g lanes at off to acc and their products with
// (x−mean) to accx.
#define DOTS4(off, acc, accx) \
	VCVTPS2PD off(SI), Y8 \
	DOTSACC(off, acc, accx)

// func bnDotsAVX2(dy, x *float32, n int, mean float64) (sg, sgx float64)
//
// Σg and Σg·(x−mean) over n blocks of 16, laid out as bnSumsAVX2's.
TEXT ·bnDotsAVX2(SB), NOSPLIT, $0-48
	MOVQ         dy+0(FP), SI
	MOVQ         x+8(FP), DI
	MOVQ         n+16(FP), CX
	VBROADCASTSD mean+24(FP), Y15
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	VXORPD       Y6, Y6, Y6
	VXORPD       Y7, Y7, Y7

dots:
	TESTQ CX, CX
	JEQ   dotsdone
	DOTS4(0, Y0, Y4)
	DOTS4(16, Y1, Y5)
	DOTS4(32, Y2, Y6)
	DOTS4(48, Y3, Y7)
	ADDQ  $64, SI
	ADDQ  $64, DI
	DECQ  CX
	JMP   dots

dotsdone:
	LANETREE(Y0, Y1, Y2, Y3, X0, X8)
	LANETREE(Y4, Y5, Y6, Y7, X4, X8)
	VMOVSD X0, sg+32(FP)
	VMOVSD X4, sgx+40(FP)
	VZEROUPPER
	RET

// func bnAffineAVX2(dst, x *float32, n int, scale, shift float32)
//
// dst = x·scale + shift over n blocks of 8, the product rounded first.
TEXT ·bnAffineAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y14
	VBROADCASTSS shift+28(FP), Y15

affine:
	TESTQ   CX, CX
	JEQ     affinedone
	VMULPS  (SI), Y14, Y0
	VADDPS  Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JMP     affine

affinedone:
	VZEROUPPER
	RET

// func bnBackAVX2(dst, dy, x *float32, n int, a, b, c float32)
//
// dst = (a·g + b·x) + c over n blocks of 8, each product rounded first.
TEXT ·bnBackAVX2(SB), NOSPLIT, $0-44
	MOVQ         dst+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS a+32(FP), Y13
	VBROADCASTSS b+36(FP), Y14
	VBROADCASTSS c+40(FP), Y15

back:
	TESTQ   CX, CX
	JEQ     backdone
	VMULPS  (SI), Y13, Y0
	VMULPS  (DX), Y14, Y1
	VADDPS  Y1, Y0, Y0
	VADDPS  Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JMP     back

backdone:
	VZEROUPPER
	RET
