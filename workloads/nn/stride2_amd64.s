//go:build amd64 && !purego

#include "textflag.h"

// Lane indices 0, 2, ..., 30: the even floats of two registers, for
// VPERMI2PS.
DATA evens<>+0(SB)/8, $0x0000000200000000
DATA evens<>+8(SB)/8, $0x0000000600000004
DATA evens<>+16(SB)/8, $0x0000000a00000008
DATA evens<>+24(SB)/8, $0x0000000e0000000c
DATA evens<>+32(SB)/8, $0x0000001200000010
DATA evens<>+40(SB)/8, $0x0000001600000014
DATA evens<>+48(SB)/8, $0x0000001a00000018
DATA evens<>+56(SB)/8, $0x0000001e0000001c
GLOBL evens<>(SB), RODATA|NOPTR, $64

// Lane indices 0, 16, 1, 16, ..., 7, 16 and 8, 16, ..., 15, 16: a
// register's low (high) eight floats spread to the even lanes, the odd
// ones taken from lane 0 of the second table (masked off by the add).
DATA spreadLo<>+0(SB)/8, $0x0000001000000000
DATA spreadLo<>+8(SB)/8, $0x0000001000000001
DATA spreadLo<>+16(SB)/8, $0x0000001000000002
DATA spreadLo<>+24(SB)/8, $0x0000001000000003
DATA spreadLo<>+32(SB)/8, $0x0000001000000004
DATA spreadLo<>+40(SB)/8, $0x0000001000000005
DATA spreadLo<>+48(SB)/8, $0x0000001000000006
DATA spreadLo<>+56(SB)/8, $0x0000001000000007
GLOBL spreadLo<>(SB), RODATA|NOPTR, $64
DATA spreadHi<>+0(SB)/8, $0x0000001000000008
DATA spreadHi<>+8(SB)/8, $0x0000001000000009
DATA spreadHi<>+16(SB)/8, $0x000000100000000a
DATA spreadHi<>+24(SB)/8, $0x000000100000000b
DATA spreadHi<>+32(SB)/8, $0x000000100000000c
DATA spreadHi<>+40(SB)/8, $0x000000100000000d
DATA spreadHi<>+48(SB)/8, $0x000000100000000e
DATA spreadHi<>+56(SB)/8, $0x000000100000000f
GLOBL spreadHi<>(SB), RODATA|NOPTR, $64

// MASK(reg, cnt, k): k = the low min(cnt, 16) bits set (cnt ≥ 0 in reg,
// clobbered; AX clobbered).
#define MASK(reg, k) \
	CMPQ  reg, $16 \
	JLE   2(PC) \
	MOVQ  $16, reg \
	MOVL  $1, AX \
	SHLXL reg, AX, AX \
	DECL  AX \
	KMOVW AX, k

// TAILMASKS sets, for a row's last n mod 16 floats (every row's the
// same, so once a call; CX holds n): K4 the lanes of those outputs, K1 and
// K2 the lanes of the 2·(n mod 16) − 1 strided floats they span, the first
// sixteen in K1, the rest in K2. Unused when n is a multiple of 16.
// Clobbers AX, BX, DX, R11.
#define TAILMASKS \
	MOVQ  CX, R11 \
	ANDQ  $15, R11 \
	LEAQ  -1(R11)(R11*1), BX \
	MOVQ  BX, DX \
	MASK(DX, K1) \
	SUBQ  $16, BX \
	JGE   2(PC) \
	XORQ  BX, BX \
	MASK(BX, K2) \
	MOVQ  R11, DX \
	MASK(DX, K4)

// func gatherStride2Z(dst *float32, dstStride int, src *float32, srcStride int, n, rows int)
//
// For each of rows rows: dst[j] = src[2j] for j < n, then dst += dstStride
// and src += srcStride (strides in floats). Reads src[0 : 2n−1] of a row
// and no further (the loads past it are masked).
TEXT ·gatherStride2Z(SB), NOSPLIT, $0-48
	MOVQ    dst+0(FP), DI
	MOVQ    dstStride+8(FP), R8
	SHLQ    $2, R8
	MOVQ    src+16(FP), SI
	MOVQ    srcStride+24(FP), R9
	SHLQ    $2, R9
	MOVQ    n+32(FP), CX
	MOVQ    rows+40(FP), R10
	VMOVUPS evens<>(SB), Z3
	MOVL    $0x7fff, AX
	KMOVW   AX, K3
	TAILMASKS
	TESTQ   R10, R10
	JEQ     gdone

grow:
	MOVQ DI, R12
	MOVQ SI, R13
	MOVQ CX, R11

gblk:
	CMPQ          R11, $16
	JLT           gtail
	VMOVUPS       (R13), Z0
	VMOVUPS.Z     64(R13), K3, Z1
	VMOVAPS       Z3, Z2
	VPERMI2PS     Z1, Z0, Z2
	VMOVUPS       Z2, (R12)
	ADDQ          $64, R12
	ADDQ          $128, R13
	SUBQ          $16, R11
	JMP           gblk

gtail:
	TESTQ     R11, R11
	JEQ       gnext
	VMOVUPS.Z (R13), K1, Z0
	VMOVUPS.Z 64(R13), K2, Z1
	VMOVAPS   Z3, Z2
	VPERMI2PS Z1, Z0, Z2
	VMOVUPS   Z2, K4, (R12)

gnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JNE  grow

gdone:
	VZEROUPPER
	RET

// func scatterAddStride2Z(dst *float32, dstStride int, src *float32, srcStride int, n, rows int)
//
// For each of rows rows: dst[2j] += src[j] for j < n, then dst += dstStride
// and src += srcStride (strides in floats). Touches dst[0 : 2n−1] of a row
// and no further; the odd floats between are loaded and stored unchanged.
TEXT ·scatterAddStride2Z(SB), NOSPLIT, $0-48
	MOVQ    dst+0(FP), DI
	MOVQ    dstStride+8(FP), R8
	SHLQ    $2, R8
	MOVQ    src+16(FP), SI
	MOVQ    srcStride+24(FP), R9
	SHLQ    $2, R9
	MOVQ    n+32(FP), CX
	MOVQ    rows+40(FP), R10
	VMOVUPS spreadLo<>(SB), Z6
	VMOVUPS spreadHi<>(SB), Z7
	VPXORD  Z5, Z5, Z5
	MOVL    $0x7fff, AX
	KMOVW   AX, K3
	MOVL    $0x5555, AX
	KMOVW   AX, K5
	TAILMASKS
	TESTQ   R10, R10
	JEQ     sdone

srow:
	MOVQ DI, R12
	MOVQ SI, R13
	MOVQ CX, R11

sblk:
	CMPQ        R11, $16
	JLT         stail
	VMOVUPS     (R13), Z4
	VMOVAPS     Z6, Z2
	VPERMI2PS   Z5, Z4, Z2
	VMOVAPS     Z7, Z8
	VPERMI2PS   Z5, Z4, Z8
	VMOVUPS     (R12), Z0
	VMOVUPS.Z   64(R12), K3, Z1
	VADDPS      Z2, Z0, K5, Z0
	VADDPS      Z8, Z1, K5, Z1
	VMOVUPS     Z0, (R12)
	VMOVUPS     Z1, K3, 64(R12)
	ADDQ        $128, R12
	ADDQ        $64, R13
	SUBQ        $16, R11
	JMP         sblk

stail:
	TESTQ     R11, R11
	JEQ       snext
	VMOVUPS.Z (R13), K4, Z4
	VMOVAPS   Z6, Z2
	VPERMI2PS Z5, Z4, Z2
	VMOVAPS   Z7, Z8
	VPERMI2PS Z5, Z4, Z8
	VMOVUPS.Z (R12), K1, Z0
	VMOVUPS.Z 64(R12), K2, Z1
	VADDPS    Z2, Z0, K5, Z0
	VADDPS    Z8, Z1, K5, Z1
	VMOVUPS   Z0, K1, (R12)
	VMOVUPS   Z1, K2, 64(R12)

snext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JNE  srow

sdone:
	VZEROUPPER
	RET
