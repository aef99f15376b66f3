//go:build amd64 && !purego

#include "textflag.h"

// ZDOTROW multiplies 16 floats of one row of A at addr by B's three slices
// in Z0..Z2 into three accumulators.
#define ZDOTROW(addr, r0, r1, r2) \
	VMOVUPS     addr, Z3 \
	VFMADD231PS Z0, Z3, r0 \
	VFMADD231PS Z1, Z3, r1 \
	VFMADD231PS Z2, Z3, r2

// ZMDOTROW is ZDOTROW for the last k mod 16 floats, loaded under mask K1
// (the other lanes read as 0 and touch no memory).
#define ZMDOTROW(addr, r0, r1, r2) \
	VMOVUPS.Z   addr, K1, Z3 \
	VFMADD231PS Z0, Z3, r0 \
	VFMADD231PS Z1, Z3, r1 \
	VFMADD231PS Z2, Z3, r2

// ZHSUM stores the sum of acc's sixteen lanes o0..o15 at off(DX): p = o_r +
// o_{r+8}, then p's eight lanes as ((p0+p4)+(p1+p5)) + ((p2+p6)+(p3+p7)),
// as the AVX2 kernel's HSUM.
#define ZHSUM(acc, accy, off) \
	VEXTRACTF64X4 $1, acc, Y0 \
	VADDPS        Y0, accy, Y0 \
	VEXTRACTF128  $1, Y0, X1 \
	VADDPS        X1, X0, X0 \
	VHADDPS       X0, X0, X0 \
	VHADDPS       X0, X0, X0 \
	VMOVSS        X0, off(DX)

// func sdotKernel4x3z(k int, a *float32, lda int, b *float32, ldb int, out *float32)
//
// sdotKernel4x3 on AVX-512 over all of k: lane r < 16 sums the terms
// l ≡ r mod 16 in order, the last k mod 16 loaded under a mask, so no
// term is left for Go to add.
TEXT ·sdotKernel4x3z(SB), NOSPLIT, $0-48
	MOVQ   k+0(FP), CX
	MOVQ   a+8(FP), SI
	MOVQ   lda+16(FP), R10
	SHLQ   $2, R10
	MOVQ   b+24(FP), DI
	MOVQ   ldb+32(FP), R12
	SHLQ   $2, R12
	MOVQ   out+40(FP), DX
	LEAQ   (SI)(R10*2), R11
	ADDQ   R10, R11
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

zdotloop:
	CMPQ    CX, $16
	JLT     zdottail
	VMOVUPS (DI), Z0
	VMOVUPS (DI)(R12*1), Z1
	VMOVUPS (DI)(R12*2), Z2
	ZDOTROW((SI), Z4, Z5, Z6)
	ZDOTROW((SI)(R10*1), Z7, Z8, Z9)
	ZDOTROW((SI)(R10*2), Z10, Z11, Z12)
	ZDOTROW((R11), Z13, Z14, Z15)
	ADDQ    $64, SI
	ADDQ    $64, R11
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     zdotloop

zdottail:
	TESTQ     CX, CX
	JEQ       zdotstore
	MOVQ      $1, AX
	SHLQ      CX, AX
	DECQ      AX
	KMOVW     AX, K1
	VMOVUPS.Z (DI), K1, Z0
	VMOVUPS.Z (DI)(R12*1), K1, Z1
	VMOVUPS.Z (DI)(R12*2), K1, Z2
	ZMDOTROW((SI), Z4, Z5, Z6)
	ZMDOTROW((SI)(R10*1), Z7, Z8, Z9)
	ZMDOTROW((SI)(R10*2), Z10, Z11, Z12)
	ZMDOTROW((R11), Z13, Z14, Z15)

zdotstore:
	ZHSUM(Z4, Y4, 0)
	ZHSUM(Z5, Y5, 4)
	ZHSUM(Z6, Y6, 8)
	ZHSUM(Z7, Y7, 12)
	ZHSUM(Z8, Y8, 16)
	ZHSUM(Z9, Y9, 20)
	ZHSUM(Z10, Y10, 24)
	ZHSUM(Z11, Y11, 28)
	ZHSUM(Z12, Y12, 32)
	ZHSUM(Z13, Y13, 36)
	ZHSUM(Z14, Y14, 40)
	ZHSUM(Z15, Y15, 44)
	VZEROUPPER
	RET
