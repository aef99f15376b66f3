//go:build amd64 && !purego

#include "textflag.h"

// func im2colShiftZ(dst, src *float32, srcStride, d int, masks *uint16, blocks, p, images int, last uint16)
//
// One patch row of a stride-1 "same" convolution for images images: for
// image j and output position q < p, dst[j·p + q] = src[j·srcStride + q +
// d] where bit q%16 of masks[q/16] is set (the tap lands in the image),
// else 0. Every block of 16 is stored whole except an image's last, which
// stores the lanes set in last (those below p). Masked-off lanes are never
// read, so q + d may fall outside the image there.
TEXT ·im2colShiftZ(SB), NOSPLIT, $0-66
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    srcStride+16(FP), R8
	SHLQ    $2, R8
	MOVQ    d+24(FP), AX
	LEAQ    (SI)(AX*4), SI
	MOVQ    masks+32(FP), BX
	MOVQ    p+48(FP), R10
	SHLQ    $2, R10
	MOVQ    images+56(FP), R11
	MOVWLZX last+64(FP), AX
	KMOVW   AX, K2
	TESTQ   R11, R11
	JEQ     idone

iimage:
	MOVQ DI, R12
	MOVQ SI, R13
	MOVQ BX, R14
	MOVQ blocks+40(FP), DX

iblock:
	MOVWLZX   (R14), AX
	KMOVW     AX, K1
	VMOVUPS.Z (R13), K1, Z0
	DECQ      DX
	JEQ       ilast
	VMOVUPS   Z0, (R12)
	ADDQ      $64, R12
	ADDQ      $64, R13
	ADDQ      $2, R14
	JMP       iblock

ilast:
	VMOVUPS Z0, K2, (R12)
	ADDQ    R10, DI
	ADDQ    R8, SI
	DECQ    R11
	JNE     iimage

idone:
	VZEROUPPER
	RET

// func col2imShiftZ(dst, src *float32, dstStride, d int, masks *uint16, blocks, p, images int)
//
// im2colShiftZ's adjoint: for image j and output position q < p whose
// mask bit is set, dst[j·dstStride + q + d] += src[j·p + q]. Only those
// lanes are read or written.
TEXT ·col2imShiftZ(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ dstStride+16(FP), R8
	SHLQ $2, R8
	MOVQ d+24(FP), AX
	LEAQ (DI)(AX*4), DI
	MOVQ masks+32(FP), BX
	MOVQ p+48(FP), R10
	SHLQ $2, R10
	MOVQ images+56(FP), R11
	TESTQ R11, R11
	JEQ   cdone

cimage:
	MOVQ DI, R12
	MOVQ SI, R13
	MOVQ BX, R14
	MOVQ blocks+40(FP), DX

cblock:
	MOVWLZX   (R14), AX
	KMOVW     AX, K1
	VMOVUPS.Z (R13), K1, Z0
	VMOVUPS.Z (R12), K1, Z1
	VADDPS    Z0, Z1, Z1
	VMOVUPS   Z1, K1, (R12)
	ADDQ      $64, R12
	ADDQ      $64, R13
	ADDQ      $2, R14
	DECQ      DX
	JNE       cblock
	ADDQ      R8, DI
	ADDQ      R10, SI
	DECQ      R11
	JNE       cimage

cdone:
	VZEROUPPER
	RET
