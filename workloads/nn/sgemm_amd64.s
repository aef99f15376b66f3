//go:build amd64 && !purego

#include "textflag.h"

// One k step of the 6×16 tile: B's 16 floats in Y0:Y1, A's six broadcast in
// turn through Y2/Y3, twelve FMAs into the accumulators Y4..Y15.
#define STEP(aoff) \
	VMOVUPS (DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	ADDQ R9, DI \
	VBROADCASTSS (aoff+0)(SI), Y2 \
	VFMADD231PS Y0, Y2, Y4 \
	VFMADD231PS Y1, Y2, Y5 \
	VBROADCASTSS (aoff+4)(SI), Y3 \
	VFMADD231PS Y0, Y3, Y6 \
	VFMADD231PS Y1, Y3, Y7 \
	VBROADCASTSS (aoff+8)(SI), Y2 \
	VFMADD231PS Y0, Y2, Y8 \
	VFMADD231PS Y1, Y2, Y9 \
	VBROADCASTSS (aoff+12)(SI), Y3 \
	VFMADD231PS Y0, Y3, Y10 \
	VFMADD231PS Y1, Y3, Y11 \
	VBROADCASTSS (aoff+16)(SI), Y2 \
	VFMADD231PS Y0, Y2, Y12 \
	VFMADD231PS Y1, Y2, Y13 \
	VBROADCASTSS (aoff+20)(SI), Y3 \
	VFMADD231PS Y0, Y3, Y14 \
	VFMADD231PS Y1, Y3, Y15

// ADDROW adds two accumulators to the 16 floats at DX and steps DX a row.
#define ADDROW(lo, hi) \
	VADDPS (DX), lo, lo \
	VMOVUPS lo, (DX) \
	VADDPS 32(DX), hi, hi \
	VMOVUPS hi, 32(DX) \
	ADDQ R8, DX

// func sgemmKernel6x16(k int, a, b *float32, ldb int, c *float32, ldc int)
//
// C[0:6, 0:16] += A·B for a packed A panel (k steps of 6 floats) and a B
// panel of k rows of 16 floats, ldb floats apart (16 when packed, B's own
// stride when read in place); C's rows are ldc floats apart. The sum
// for every element runs over k in order from zero and is then added to C,
// so the result does not depend on anything but the operands.
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R9
	SHLQ $2, R9
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R8
	SHLQ $2, R8
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	CMPQ CX, $4
	JLT  tail

loop4:
	STEP(0)
	STEP(24)
	STEP(48)
	STEP(72)
	ADDQ $96, SI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop4

tail:
	TESTQ CX, CX
	JEQ   store

loop1:
	STEP(0)
	ADDQ $24, SI
	DECQ CX
	JNE  loop1

store:
	ADDROW(Y4, Y5)
	ADDROW(Y6, Y7)
	ADDROW(Y8, Y9)
	ADDROW(Y10, Y11)
	ADDROW(Y12, Y13)
	ADDROW(Y14, Y15)
	VZEROUPPER
	RET
