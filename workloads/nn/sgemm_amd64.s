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

// PUTROW stores two accumulators over the 16 floats at DX and steps DX a row.
#define PUTROW(lo, hi) \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, 32(DX) \
	ADDQ R8, DX

// func sgemmKernel6x16(k int, a, b *float32, ldb int, c *float32, ldc int, tiles int, store bool)
//
// C[0:6, 0:16] += A·B for a packed A panel (k steps of 6 floats) and a B
// panel of k rows of 16 floats, ldb floats apart (16 when packed, B's own
// stride when read in place); C's rows are ldc floats apart. The sum
// for every element runs over k in order from zero and is then added to C,
// so the result does not depend on anything but the operands. With store
// set, the sums are stored over C instead of added to it. It does this
// for tiles tiles down C: the A panels follow one another (SI ends each
// at the next), and so do C's rows (DX ends each tile six rows on).
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-57
	MOVQ    a+8(FP), SI
	MOVQ    ldb+24(FP), R9
	SHLQ    $2, R9
	MOVQ    c+32(FP), DX
	MOVQ    ldc+40(FP), R8
	SHLQ    $2, R8
	MOVQ    tiles+48(FP), R10
	MOVBLZX store+56(FP), R11

tile:
	MOVQ   k+0(FP), CX
	MOVQ   b+16(FP), DI
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
	CMPQ   CX, $4
	JLT    tail

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
	TESTL R11, R11
	JNE   put
	ADDROW(Y4, Y5)
	ADDROW(Y6, Y7)
	ADDROW(Y8, Y9)
	ADDROW(Y10, Y11)
	ADDROW(Y12, Y13)
	ADDROW(Y14, Y15)
	JMP   next

put:
	PUTROW(Y4, Y5)
	PUTROW(Y6, Y7)
	PUTROW(Y8, Y9)
	PUTROW(Y10, Y11)
	PUTROW(Y12, Y13)
	PUTROW(Y14, Y15)

next:
	DECQ R10
	JNE  tile
	VZEROUPPER
	RET

// DOTROW multiplies one 8-float slice of an A row (at addr) by the three B
// slices in Y0..Y2 into three accumulators.
#define DOTROW(addr, r0, r1, r2) \
	VMOVUPS addr, Y3 \
	VFMADD231PS Y0, Y3, r0 \
	VFMADD231PS Y1, Y3, r1 \
	VFMADD231PS Y2, Y3, r2

// HSUM stores the sum of acc's eight lanes o0..o7 at off(DX), added as
// ((o0+o4)+(o1+o5)) + ((o2+o6)+(o3+o7)).
#define HSUM(acc, accx, off) \
	VEXTRACTF128 $1, acc, X0 \
	VADDPS       X0, accx, X0 \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VMOVSS       X0, off(DX)

// func sdotKernel4x3(k8 int, a *float32, lda int, b *float32, ldb int, out *float32)
//
// For rows i < 4 of A and rows j < 3 of B (both along k, lda and ldb floats
// apart), out[3i+j] = Σ a[i][l]·b[j][l] over l < 8·k8: eight lane sums, each
// over k in order, then added as HSUM does; A·Bᵀ without packing.
TEXT ·sdotKernel4x3(SB), NOSPLIT, $0-48
	MOVQ k8+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	SHLQ $2, R10
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R12
	SHLQ $2, R12
	MOVQ out+40(FP), DX
	LEAQ (SI)(R10*2), R11
	ADDQ R10, R11
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
	TESTQ CX, CX
	JEQ   dotstore

dotloop:
	VMOVUPS (DI), Y0
	VMOVUPS (DI)(R12*1), Y1
	VMOVUPS (DI)(R12*2), Y2
	DOTROW((SI), Y4, Y5, Y6)
	DOTROW((SI)(R10*1), Y7, Y8, Y9)
	DOTROW((SI)(R10*2), Y10, Y11, Y12)
	DOTROW((R11), Y13, Y14, Y15)
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, DI
	DECQ CX
	JNE  dotloop

dotstore:
	HSUM(Y4, X4, 0)
	HSUM(Y5, X5, 4)
	HSUM(Y6, X6, 8)
	HSUM(Y7, X7, 12)
	HSUM(Y8, X8, 16)
	HSUM(Y9, X9, 20)
	HSUM(Y10, X10, 24)
	HSUM(Y11, X11, 28)
	HSUM(Y12, X12, 32)
	HSUM(Y13, X13, 36)
	HSUM(Y14, X14, 40)
	HSUM(Y15, X15, 44)
	VZEROUPPER
	RET

// func vaddF32(dst, src *float32, n int)
//
// dst[i] += src[i] for i < n, eight at a time: one rounding per element,
// as the scalar loop.
TEXT ·vaddF32(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

add8:
	CMPQ    CX, $8
	JLT     add1
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     add8

add1:
	TESTQ  CX, CX
	JEQ    addend
	VMOVSS (DI), X0
	VADDSS (SI), X0, X0
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   $4, SI
	DECQ   CX
	JMP    add1

addend:
	VZEROUPPER
	RET

// ZSTEP is one k step of the 6×16 tile on AVX-512: B's 16 floats in one
// register, A's six broadcast from memory into six FMAs.
#define ZSTEP(breg, aoff, r0, r1, r2, r3, r4, r5) \
	VFMADD231PS.BCST (aoff+0)(SI), breg, r0 \
	VFMADD231PS.BCST (aoff+4)(SI), breg, r1 \
	VFMADD231PS.BCST (aoff+8)(SI), breg, r2 \
	VFMADD231PS.BCST (aoff+12)(SI), breg, r3 \
	VFMADD231PS.BCST (aoff+16)(SI), breg, r4 \
	VFMADD231PS.BCST (aoff+20)(SI), breg, r5

// ZPUT2 adds (or, with store set in R11, stores) two accumulators over
// two rows of C at DX and DX+R8, then moves DX two rows down.
#define ZPUT2(r0, r1) \
	TESTL   R11, R11 \
	JNE     3(PC) \
	VADDPS  (DX), r0, r0 \
	VADDPS  (DX)(R8*1), r1, r1 \
	VMOVUPS r0, (DX) \
	VMOVUPS r1, (DX)(R8*1) \
	LEAQ    (DX)(R8*2), DX

// func sgemmKernel6x16z(k int, a, b *float32, ldb int, c *float32, ldc int, tiles int, store bool)
//
// sgemmKernel6x16 on AVX-512: one 16-lane register per row of the tile, so
// six chains of FMAs; even and odd k go to two sets of accumulators (Z4..Z9
// and Z10..Z15) so that twelve are in flight, and the two are added
// (even + odd) before C (added to it, or stored over it with store set).
// The order is fixed by k alone. Tiles follow one another as in
// sgemmKernel6x16.
TEXT ·sgemmKernel6x16z(SB), NOSPLIT, $0-57
	MOVQ    a+8(FP), SI
	MOVQ    ldb+24(FP), R9
	SHLQ    $2, R9
	MOVQ    c+32(FP), DX
	MOVQ    ldc+40(FP), R8
	SHLQ    $2, R8
	MOVQ    tiles+48(FP), R10
	MOVBLZX store+56(FP), R11

ztile:
	MOVQ   k+0(FP), CX
	MOVQ   b+16(FP), DI
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
	CMPQ   CX, $2
	JLT    ztail

zloop2:
	VMOVUPS (DI), Z0
	VMOVUPS (DI)(R9*1), Z1
	ZSTEP(Z0, 0, Z4, Z5, Z6, Z7, Z8, Z9)
	ZSTEP(Z1, 24, Z10, Z11, Z12, Z13, Z14, Z15)
	LEAQ (DI)(R9*2), DI
	ADDQ $48, SI
	SUBQ $2, CX
	CMPQ CX, $2
	JGE  zloop2

ztail:
	TESTQ CX, CX
	JEQ   zstore
	VMOVUPS (DI), Z0
	ZSTEP(Z0, 0, Z4, Z5, Z6, Z7, Z8, Z9)
	ADDQ $24, SI

zstore:
	VADDPS Z10, Z4, Z4
	VADDPS Z11, Z5, Z5
	VADDPS Z12, Z6, Z6
	VADDPS Z13, Z7, Z7
	VADDPS Z14, Z8, Z8
	VADDPS Z15, Z9, Z9
	ZPUT2(Z4, Z5)
	ZPUT2(Z6, Z7)
	ZPUT2(Z8, Z9)
	DECQ R10
	JNE  ztile
	VZEROUPPER
	RET

#define ZSTEP8(breg, aoff, r0, r1, r2, r3, r4, r5, r6, r7) \
	VFMADD231PS.BCST (aoff+0)(SI), breg, r0 \
	VFMADD231PS.BCST (aoff+4)(SI), breg, r1 \
	VFMADD231PS.BCST (aoff+8)(SI), breg, r2 \
	VFMADD231PS.BCST (aoff+12)(SI), breg, r3 \
	VFMADD231PS.BCST (aoff+16)(SI), breg, r4 \
	VFMADD231PS.BCST (aoff+20)(SI), breg, r5 \
	VFMADD231PS.BCST (aoff+24)(SI), breg, r6 \
	VFMADD231PS.BCST (aoff+28)(SI), breg, r7

// func sgemmKernel8x16z(k int, a, b *float32, ldb int, c *float32, ldc int, tiles int, store bool)
//
// sgemmKernel6x16z with eight rows a tile (A panels of eight floats a
// step): even and odd k in Z4..Z11 and Z12..Z19, added before C. Each
// element's sum is the 6-row kernel's, bit for bit: it depends on k alone.
TEXT ·sgemmKernel8x16z(SB), NOSPLIT, $0-57
	MOVQ    a+8(FP), SI
	MOVQ    ldb+24(FP), R9
	SHLQ    $2, R9
	MOVQ    c+32(FP), DX
	MOVQ    ldc+40(FP), R8
	SHLQ    $2, R8
	MOVQ    tiles+48(FP), R10
	MOVBLZX store+56(FP), R11

z8tile:
	MOVQ   k+0(FP), CX
	MOVQ   b+16(FP), DI
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
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CMPQ   CX, $2
	JLT    z8tail

z8loop2:
	VMOVUPS (DI), Z0
	VMOVUPS (DI)(R9*1), Z1
	ZSTEP8(Z0, 0, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)
	ZSTEP8(Z1, 32, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19)
	LEAQ (DI)(R9*2), DI
	ADDQ $64, SI
	SUBQ $2, CX
	CMPQ CX, $2
	JGE  z8loop2

z8tail:
	TESTQ CX, CX
	JEQ   z8store
	VMOVUPS (DI), Z0
	ZSTEP8(Z0, 0, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)
	ADDQ $32, SI

z8store:
	VADDPS Z12, Z4, Z4
	VADDPS Z13, Z5, Z5
	VADDPS Z14, Z6, Z6
	VADDPS Z15, Z7, Z7
	VADDPS Z16, Z8, Z8
	VADDPS Z17, Z9, Z9
	VADDPS Z18, Z10, Z10
	VADDPS Z19, Z11, Z11
	ZPUT2(Z4, Z5)
	ZPUT2(Z6, Z7)
	ZPUT2(Z8, Z9)
	ZPUT2(Z10, Z11)
	DECQ R10
	JNE  z8tile
	VZEROUPPER
	RET
