//go:build amd64 && !purego

#include "textflag.h"

// Lane indices 0, 2, …, 30 and 1, 3, …, 31: the even and the odd floats
// of two registers, for VPERMI2PS.
DATA wgEvens<>+0(SB)/8, $0x0000000200000000
DATA wgEvens<>+8(SB)/8, $0x0000000600000004
DATA wgEvens<>+16(SB)/8, $0x0000000a00000008
DATA wgEvens<>+24(SB)/8, $0x0000000e0000000c
DATA wgEvens<>+32(SB)/8, $0x0000001200000010
DATA wgEvens<>+40(SB)/8, $0x0000001600000014
DATA wgEvens<>+48(SB)/8, $0x0000001a00000018
DATA wgEvens<>+56(SB)/8, $0x0000001e0000001c
GLOBL wgEvens<>(SB), RODATA|NOPTR, $64
DATA wgOdds<>+0(SB)/8, $0x0000000300000001
DATA wgOdds<>+8(SB)/8, $0x0000000700000005
DATA wgOdds<>+16(SB)/8, $0x0000000b00000009
DATA wgOdds<>+24(SB)/8, $0x0000000f0000000d
DATA wgOdds<>+32(SB)/8, $0x0000001300000011
DATA wgOdds<>+40(SB)/8, $0x0000001700000015
DATA wgOdds<>+48(SB)/8, $0x0000001b00000019
DATA wgOdds<>+56(SB)/8, $0x0000001f0000001d
GLOBL wgOdds<>(SB), RODATA|NOPTR, $64

// Lane indices 0, 16, 1, 17, …, 7, 23 and 8, 24, …, 15, 31: two registers'
// low (high) eight floats interleaved, the first's at the even lanes.
DATA wgZipLo<>+0(SB)/8, $0x0000001000000000
DATA wgZipLo<>+8(SB)/8, $0x0000001100000001
DATA wgZipLo<>+16(SB)/8, $0x0000001200000002
DATA wgZipLo<>+24(SB)/8, $0x0000001300000003
DATA wgZipLo<>+32(SB)/8, $0x0000001400000004
DATA wgZipLo<>+40(SB)/8, $0x0000001500000005
DATA wgZipLo<>+48(SB)/8, $0x0000001600000006
DATA wgZipLo<>+56(SB)/8, $0x0000001700000007
GLOBL wgZipLo<>(SB), RODATA|NOPTR, $64
DATA wgZipHi<>+0(SB)/8, $0x0000001800000008
DATA wgZipHi<>+8(SB)/8, $0x0000001900000009
DATA wgZipHi<>+16(SB)/8, $0x0000001a0000000a
DATA wgZipHi<>+24(SB)/8, $0x0000001b0000000b
DATA wgZipHi<>+32(SB)/8, $0x0000001c0000000c
DATA wgZipHi<>+40(SB)/8, $0x0000001d0000000d
DATA wgZipHi<>+48(SB)/8, $0x0000001e0000000e
DATA wgZipHi<>+56(SB)/8, $0x0000001f0000000f
GLOBL wgZipHi<>(SB), RODATA|NOPTR, $64

// WGROW(i, r0, r1, r2, r3): input row 2ty−1+i of the tile row (R13 = 2ty−1,
// R10 at the row's column −1; lanes off the map, and the whole row when
// it is off the map, load as zeros), de-interleaved into the tiles'
// columns d0…d3 (16 tiles: Z20, Z16, Z22, Z18, the odd ones permuted over
// their loads), then r0 = d0 − d2, r1 = d1 + d2, r2 = d2 − d1,
// r3 = d1 − d3. Clobbers AX, DX, K6, K7, Z16–Z22.
#define WGROW(i, r0, r1, r2, r3) \
	LEAQ      i(R13), AX \
	CMPQ      AX, BX \
	SBBL      DX, DX \
	KMOVW     DX, K6 \
	KANDW     K1, K6, K7 \
	VMOVUPS.Z (R10), K7, Z16 \
	KANDW     K2, K6, K7 \
	VMOVUPS.Z 64(R10), K7, Z17 \
	KANDW     K3, K6, K7 \
	VMOVUPS.Z 8(R10), K7, Z18 \
	KANDW     K4, K6, K7 \
	VMOVUPS.Z 72(R10), K7, Z19 \
	VMOVAPS   Z30, Z20 \
	VPERMI2PS Z17, Z16, Z20 \
	VPERMT2PS Z17, Z31, Z16 \
	VMOVAPS   Z30, Z22 \
	VPERMI2PS Z19, Z18, Z22 \
	VPERMT2PS Z19, Z31, Z18 \
	VSUBPS    Z22, Z20, r0 \
	VADDPS    Z22, Z16, r1 \
	VSUBPS    Z16, Z22, r2 \
	VSUBPS    Z18, Z16, r3

// WGCOL(r0, r1, r2, r3): one column j of V from the rows' r[i][j]: V0j =
// r0 − r2, V1j = r1 + r2, V2j = r2 − r1, V3j = r1 − r3, stored under K5 at
// R10 + i·R11 (R10 at value j, R11 four values apart, R12 twelve).
#define WGCOL(r0, r1, r2, r3) \
	VSUBPS  r2, r0, Z24 \
	VADDPS  r2, r1, Z25 \
	VSUBPS  r1, r2, Z26 \
	VSUBPS  r3, r1, Z27 \
	VMOVUPS Z24, K5, (R10) \
	VMOVUPS Z25, K5, (R10)(R11*1) \
	VMOVUPS Z26, K5, (R10)(R11*2) \
	VMOVUPS Z27, K5, (R10)(R12*1)

// WGROWSETUP: the row kernels' common arguments (their frames agree on
// them): R8 ld in bytes, R11 four values, BX h, R9 w in bytes, CX th, tw
// in bytes back in its slot, AX masks.
#define WGROWSETUP \
	MOVQ ld+8(FP), R8 \
	SHLQ $2, R8 \
	LEAQ (R8*4), R11 \
	MOVQ h+24(FP), BX \
	MOVQ w+32(FP), R9 \
	SHLQ $2, R9 \
	MOVQ th+40(FP), CX \
	MOVQ tw+48(FP), AX \
	SHLQ $2, AX \
	MOVQ AX, tw+48(FP) \
	MOVQ masks+56(FP), AX

// WGGATHER(dst): the 16 lanes of the wgGather at R13 from the 64 floats in
// Z0–Z3 (zeros where it selects none), then R13 to the next entry.
// Clobbers K1, K2, Z26, Z27.
#define WGGATHER(dst) \
	VMOVUPS     (R13), Z26 \
	VMOVAPS     Z26, Z27 \
	KMOVW       64(R13), K1 \
	KMOVW       66(R13), K2 \
	VPERMI2PS.Z Z1, Z0, K1, Z26 \
	VPERMI2PS.Z Z3, Z2, K2, Z27 \
	VBLENDMPS   Z27, Z26, K2, dst \
	ADDQ        $72, R13

// WGSMALLROW(r0, r1, r2, r3): row i of every tile of a small plane (the
// next four wgGathers: d0…d3), to r0 = d0 − d2, r1 = d1 + d2, r2 = d2 − d1,
// r3 = d1 − d3. Clobbers Z20–Z23 and WGGATHER's.
#define WGSMALLROW(r0, r1, r2, r3) \
	WGGATHER(Z20) \
	WGGATHER(Z21) \
	WGGATHER(Z22) \
	WGGATHER(Z23) \
	VSUBPS Z22, Z20, r0 \
	VADDPS Z22, Z21, r1 \
	VSUBPS Z21, Z22, r2 \
	VSUBPS Z23, Z21, r3

// WGLOADPLANE: the plane at SI into Z0–Z3 under K3, K4, K6, K7 (its floats
// in each register; the rest zeros).
#define WGLOADPLANE \
	VMOVUPS.Z (SI), K3, Z0 \
	VMOVUPS.Z 64(SI), K4, Z1 \
	VMOVUPS.Z 128(SI), K6, Z2 \
	VMOVUPS.Z 192(SI), K7, Z3

// WGSMALLSETUP: the small kernels' common arguments (their frames agree
// on them): DI the first, R8 ld in bytes, R11 four values, R12 twelve, SI
// the third, CX planes, R9 hw in bytes, BX step in bytes, DX the tables,
// K3, K4, K6, K7 the plane's lanes, K5 the tiles'.
#define WGSMALLSETUP \
	MOVQ  ld+8(FP), R8 \
	SHLQ  $2, R8 \
	LEAQ  (R8*4), R11 \
	LEAQ  (R11)(R11*2), R12 \
	MOVQ  planes+24(FP), CX \
	MOVQ  hw+32(FP), R9 \
	SHLQ  $2, R9 \
	MOVQ  step+40(FP), BX \
	SHLQ  $2, BX \
	MOVQ  tab+48(FP), DX \
	KMOVW 1440(DX), K3 \
	KMOVW 1442(DX), K4 \
	KMOVW 1444(DX), K6 \
	KMOVW 1446(DX), K7 \
	KMOVW 1448(DX), K5

// func winogradInZ(v *float32, ld int, x *float32, h, w, th, tw int, masks *uint16)
//
// winogradInGo for a map at most 32 wide (tw ≤ 16): every tile row's 16
// values for its tiles, value ξ at v[ξ·ld + ty·tw + tx]. masks: the loads'
// lanes and the tiles' (winogradInMasks).
TEXT ·winogradInZ(SB), NOSPLIT, $0-64
	MOVQ    v+0(FP), DI
	MOVQ    x+16(FP), SI
	WGROWSETUP
	LEAQ    (R11)(R11*2), R12
	KMOVW   (AX), K1
	KMOVW   2(AX), K2
	KMOVW   4(AX), K3
	KMOVW   6(AX), K4
	KMOVW   8(AX), K5
	VMOVUPS wgEvens<>(SB), Z30
	VMOVUPS wgOdds<>(SB), Z31
	SUBQ    R9, SI
	SUBQ    $4, SI
	MOVQ    $-1, R13
	TESTQ   CX, CX
	JEQ     indone

intile:
	// Rows two tile rows ahead (the maps come from memory; the
	// prefetcher alone left this kernel waiting on them).
	LEAQ       (SI)(R9*4), R10
	LEAQ       (R10)(R9*2), R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 128(R10)
	PREFETCHT0 192(R10)
	MOVQ  SI, R10
	WGROW(0, Z0, Z1, Z2, Z3)
	ADDQ  R9, R10
	WGROW(1, Z4, Z5, Z6, Z7)
	ADDQ  R9, R10
	WGROW(2, Z8, Z9, Z10, Z11)
	ADDQ  R9, R10
	WGROW(3, Z12, Z13, Z14, Z15)
	MOVQ  DI, R10
	WGCOL(Z0, Z4, Z8, Z12)
	ADDQ  R8, R10
	WGCOL(Z1, Z5, Z9, Z13)
	ADDQ  R8, R10
	WGCOL(Z2, Z6, Z10, Z14)
	ADDQ  R8, R10
	WGCOL(Z3, Z7, Z11, Z15)
	ADDQ  tw+48(FP), DI
	ADDQ  $2, R13
	LEAQ  (SI)(R9*2), SI
	DECQ  CX
	JNE   intile

indone:
	VZEROUPPER
	RET

// WGOROW(w0, w1): the four products of value row i of a tile row (R10 at
// value 4i, R8 one value apart, R12 three), under K3, to w0 = m0 + m1 +
// m2 and w1 = m1 − m2 − m3. Clobbers Z16–Z19.
#define WGOROW(w0, w1) \
	VMOVUPS.Z (R10), K3, Z16 \
	VMOVUPS.Z (R10)(R8*1), K3, Z17 \
	VMOVUPS.Z (R10)(R8*2), K3, Z18 \
	VMOVUPS.Z (R10)(R12*1), K3, Z19 \
	VADDPS    Z17, Z16, w0 \
	VADDPS    Z18, w0, w0 \
	VSUBPS    Z18, Z17, w1 \
	VSUBPS    Z19, w1, w1

// func winogradOutZ(y *float32, ld int, m *float32, h, w, th, tw int, masks *uint16)
//
// winogradOutGo for a map at most 32 wide: each tile row's 2×2 outputs
// from its tiles' 16 products, value ξ of tile (ty, tx) at
// m[ξ·ld + ty·tw + tx], written to rows 2ty and 2ty+1 of the h×w plane y
// (those in the map; masks: a row's columns 0…15 and 16…31, the tiles').
TEXT ·winogradOutZ(SB), NOSPLIT, $0-64
	MOVQ    y+0(FP), DI
	MOVQ    m+16(FP), SI
	WGROWSETUP
	LEAQ    (R8)(R8*2), R12
	KMOVW   (AX), K1
	KMOVW   2(AX), K2
	KMOVW   4(AX), K3
	VMOVUPS wgZipLo<>(SB), Z28
	VMOVUPS wgZipHi<>(SB), Z29
	MOVQ    $1, R13
	TESTQ   CX, CX
	JEQ     outdone

outtile:
	// The output rows two tile rows ahead, for the stores.
	LEAQ       (DI)(R9*4), R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 128(R10)
	PREFETCHT0 192(R10)
	MOVQ      SI, R10
	WGOROW(Z0, Z1)
	ADDQ      R11, R10
	WGOROW(Z2, Z3)
	ADDQ      R11, R10
	WGOROW(Z4, Z5)
	ADDQ      R11, R10
	WGOROW(Z6, Z7)
	VADDPS    Z2, Z0, Z8
	VADDPS    Z4, Z8, Z8
	VADDPS    Z3, Z1, Z9
	VADDPS    Z5, Z9, Z9
	VSUBPS    Z4, Z2, Z10
	VSUBPS    Z6, Z10, Z10
	VSUBPS    Z5, Z3, Z11
	VSUBPS    Z7, Z11, Z11
	VMOVAPS   Z28, Z12
	VPERMI2PS Z9, Z8, Z12
	VMOVAPS   Z29, Z13
	VPERMI2PS Z9, Z8, Z13
	VMOVUPS   Z12, K1, (DI)
	VMOVUPS   Z13, K2, 64(DI)
	CMPQ      R13, BX
	SBBL      DX, DX
	KMOVW     DX, K6
	VMOVAPS   Z28, Z14
	VPERMI2PS Z11, Z10, Z14
	VMOVAPS   Z29, Z15
	VPERMI2PS Z11, Z10, Z15
	KANDW     K1, K6, K7
	VMOVUPS   Z14, K7, (DI)(R9*1)
	KANDW     K2, K6, K7
	VMOVUPS   Z15, K7, 64(DI)(R9*1)
	LEAQ      (DI)(R9*2), DI
	ADDQ      tw+48(FP), SI
	ADDQ      $2, R13
	DECQ      CX
	JNE       outtile

outdone:
	VZEROUPPER
	RET

// WGADJCOL(e0, e1): column j of A·dY·Aᵀ from the rows' e[0][j], e[1][j]:
// e0, e0 + e1, e0 − e1, −e1 (Z29 the sign bits), stored under K5 at
// R10 + i·R11 (R10 at value j, R11 four values apart, R12 twelve).
#define WGADJCOL(e0, e1) \
	VADDPS  e1, e0, Z24 \
	VSUBPS  e1, e0, Z25 \
	VXORPS  Z29, e1, Z26 \
	VMOVUPS e0, K5, (R10) \
	VMOVUPS Z24, K5, (R10)(R11*1) \
	VMOVUPS Z25, K5, (R10)(R11*2) \
	VMOVUPS Z26, K5, (R10)(R12*1)

// func winogradOutAdjZ(mb *float32, ld int, dy *float32, h, w, th, tw int, masks *uint16)
//
// winogradOutAdjGo for a map at most 32 wide: each tile's 16 values of
// A·dY·Aᵀ from its 2×2 gradients (rows 2ty and 2ty+1 of the h×w plane dy,
// zeros off the map), value ξ at mb[ξ·ld + ty·tw + tx]. masks: a row's
// columns 0…15 and 16…31, the tiles' (winogradOutMasks).
TEXT ·winogradOutAdjZ(SB), NOSPLIT, $0-64
	MOVQ         mb+0(FP), DI
	MOVQ         dy+16(FP), SI
	WGROWSETUP
	LEAQ         (R11)(R11*2), R12
	KMOVW        (AX), K1
	KMOVW        2(AX), K2
	KMOVW        4(AX), K5
	VMOVUPS      wgEvens<>(SB), Z30
	VMOVUPS      wgOdds<>(SB), Z31
	MOVL         $0x80000000, AX
	VPBROADCASTD AX, Z29
	MOVQ         $1, R13
	TESTQ        CX, CX
	JEQ          adjdone

adjtile:
	// The rows two tile rows ahead.
	LEAQ       (SI)(R9*4), R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 128(R10)
	PREFETCHT0 192(R10)
	// Row 2ty: d00 in Z20, d01 in Z16; row 2ty+1 (zeros off the map):
	// d10 in Z22, d11 in Z18.
	VMOVUPS.Z  (SI), K1, Z16
	VMOVUPS.Z  64(SI), K2, Z17
	VMOVAPS    Z30, Z20
	VPERMI2PS  Z17, Z16, Z20
	VPERMT2PS  Z17, Z31, Z16
	CMPQ       R13, BX
	SBBL       DX, DX
	KMOVW      DX, K6
	KANDW      K1, K6, K7
	VMOVUPS.Z  (SI)(R9*1), K7, Z18
	KANDW      K2, K6, K7
	VMOVUPS.Z  64(SI)(R9*1), K7, Z19
	VMOVAPS    Z30, Z22
	VPERMI2PS  Z19, Z18, Z22
	VPERMT2PS  Z19, Z31, Z18
	// e[a] = d_a0, d_a0 + d_a1, d_a0 − d_a1, −d_a1: row 0 in Z0–Z3,
	// row 1 in Z4–Z7.
	VMOVAPS    Z20, Z0
	VADDPS     Z16, Z20, Z1
	VSUBPS     Z16, Z20, Z2
	VXORPS     Z29, Z16, Z3
	VMOVAPS    Z22, Z4
	VADDPS     Z18, Z22, Z5
	VSUBPS     Z18, Z22, Z6
	VXORPS     Z29, Z18, Z7
	MOVQ       DI, R10
	WGADJCOL(Z0, Z4)
	ADDQ       R8, R10
	WGADJCOL(Z1, Z5)
	ADDQ       R8, R10
	WGADJCOL(Z2, Z6)
	ADDQ       R8, R10
	WGADJCOL(Z3, Z7)
	ADDQ       tw+48(FP), DI
	LEAQ       (SI)(R9*2), SI
	ADDQ       $2, R13
	DECQ       CX
	JNE        adjtile

adjdone:
	VZEROUPPER
	RET

// func winogradInSmallZ(v *float32, ld int, x *float32, planes, hw, step int, tab *wgSmall)
//
// winogradInGo for planes small maps (wgSmall) hw floats apart from x, a
// plane's 16 tiles in one register: plane k's value ξ of tile t at
// v[ξ·ld + k·step + t].
TEXT ·winogradInSmallZ(SB), NOSPLIT, $0-56
	MOVQ v+0(FP), DI
	MOVQ x+16(FP), SI
	WGSMALLSETUP
	TESTQ CX, CX
	JEQ   insdone

insplane:
	WGLOADPLANE
	MOVQ DX, R13
	WGSMALLROW(Z4, Z5, Z6, Z7)
	WGSMALLROW(Z8, Z9, Z10, Z11)
	WGSMALLROW(Z12, Z13, Z14, Z15)
	WGSMALLROW(Z16, Z17, Z18, Z19)
	MOVQ DI, R10
	WGCOL(Z4, Z8, Z12, Z16)
	ADDQ R8, R10
	WGCOL(Z5, Z9, Z13, Z17)
	ADDQ R8, R10
	WGCOL(Z6, Z10, Z14, Z18)
	ADDQ R8, R10
	WGCOL(Z7, Z11, Z15, Z19)
	ADDQ R9, SI
	ADDQ BX, DI
	DECQ CX
	JNE  insplane

insdone:
	VZEROUPPER
	RET

// func winogradOutSmallZ(y *float32, ld int, m *float32, planes, hw, step int, tab *wgSmall)
//
// winogradOutGo for planes small maps hw floats apart in y: plane k from
// its tiles' products, value ξ of tile t at m[ξ·ld + k·step + t].
TEXT ·winogradOutSmallZ(SB), NOSPLIT, $0-56
	MOVQ  y+0(FP), DI
	MOVQ  m+16(FP), SI
	WGSMALLSETUP
	LEAQ  (R8)(R8*2), R12
	KMOVW 1448(DX), K3
	KMOVW 1440(DX), K4
	KMOVW 1442(DX), K5
	KMOVW 1444(DX), K6
	KMOVW 1446(DX), K7
	TESTQ CX, CX
	JEQ   outsdone

outsplane:
	MOVQ      SI, R10
	WGOROW(Z4, Z5)
	ADDQ      R11, R10
	WGOROW(Z6, Z7)
	ADDQ      R11, R10
	WGOROW(Z8, Z9)
	ADDQ      R11, R10
	WGOROW(Z10, Z11)
	VADDPS    Z6, Z4, Z0
	VADDPS    Z8, Z0, Z0
	VADDPS    Z7, Z5, Z1
	VADDPS    Z9, Z1, Z1
	VSUBPS    Z8, Z6, Z2
	VSUBPS    Z10, Z2, Z2
	VSUBPS    Z9, Z7, Z3
	VSUBPS    Z11, Z3, Z3
	LEAQ      1152(DX), R13
	WGGATHER(Z12)
	WGGATHER(Z13)
	WGGATHER(Z14)
	WGGATHER(Z15)
	VMOVUPS   Z12, K4, (DI)
	VMOVUPS   Z13, K5, 64(DI)
	VMOVUPS   Z14, K6, 128(DI)
	VMOVUPS   Z15, K7, 192(DI)
	ADDQ      R9, DI
	ADDQ      BX, SI
	DECQ      CX
	JNE       outsplane

outsdone:
	VZEROUPPER
	RET
