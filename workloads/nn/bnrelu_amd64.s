//go:build amd64 && !purego

#include "textflag.h"
#include "kern_amd64.h"

// Batch norm fused with the ReLU after it (bnrelu.go): the kernels of
// bnkern_amd64.s with the ReLU's forward or its gradient mask folded in,
// each element's arithmetic the unfused pair's, so the bits are theirs.

// func bnAffineReLUAVX2(dst, x *float32, n int, scale, shift float32)
//
// dst = max(x·scale + shift, 0) over n blocks of 8: bnAffineAVX2, then
// RELU8.
TEXT ·bnAffineReLUAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y14
	VBROADCASTSS shift+28(FP), Y13
	VXORPS       Y15, Y15, Y15

affine:
	TESTQ   CX, CX
	JEQ     affinedone
	VMULPS  (SI), Y14, Y0
	VADDPS  Y13, Y0, Y0
	RELU8(Y0)
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JMP     affine

affinedone:
	VZEROUPPER
	RET

// MDOTS4 is bnkern_amd64.s's DOTS4 on g = dy where y > 0 (as a signed
// integer: positive floats), else +0: reluGradAVX2's mask.
#define MDOTS4(off, acc, accx) \
	VMOVUPS   off(BX), X10      \
	VPCMPGTD  X11, X10, X10     \
	VPAND     off(SI), X10, X10 \
	VCVTPS2PD X10, Y8           \
	DOTSACC(off, acc, accx)

// func bnDotsMaskAVX2(dy, y, x *float32, n int, mean float64) (sg, sgx float64)
//
// bnDotsAVX2 over the ReLU's gradient: Σg and Σg·(x−mean), g masked by y.
TEXT ·bnDotsMaskAVX2(SB), NOSPLIT, $0-56
	MOVQ         dy+0(FP), SI
	MOVQ         y+8(FP), BX
	MOVQ         x+16(FP), DI
	MOVQ         n+24(FP), CX
	VBROADCASTSD mean+32(FP), Y15
	VPXOR        X11, X11, X11
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	VXORPD       Y6, Y6, Y6
	VXORPD       Y7, Y7, Y7

mdots:
	TESTQ CX, CX
	JEQ   mdotsdone
	MDOTS4(0, Y0, Y4)
	MDOTS4(16, Y1, Y5)
	MDOTS4(32, Y2, Y6)
	MDOTS4(48, Y3, Y7)
	ADDQ  $64, SI
	ADDQ  $64, BX
	ADDQ  $64, DI
	DECQ  CX
	JMP   mdots

mdotsdone:
	LANETREE(Y0, Y1, Y2, Y3, X0, X8)
	LANETREE(Y4, Y5, Y6, Y7, X4, X8)
	VMOVSD X0, sg+40(FP)
	VMOVSD X4, sgx+48(FP)
	VZEROUPPER
	RET

// func bnBackMaskAVX2(dst, dy, y, x *float32, n int, a, b, c float32)
//
// bnBackAVX2 over the ReLU's gradient: dst = (a·g + b·x) + c, g masked by y.
TEXT ·bnBackMaskAVX2(SB), NOSPLIT, $0-52
	MOVQ         dst+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         y+16(FP), BX
	MOVQ         x+24(FP), DX
	MOVQ         n+32(FP), CX
	VBROADCASTSS a+40(FP), Y13
	VBROADCASTSS b+44(FP), Y14
	VBROADCASTSS c+48(FP), Y15
	VPXOR        Y12, Y12, Y12

mback:
	TESTQ    CX, CX
	JEQ      mbackdone
	VMOVUPS  (BX), Y2
	VPCMPGTD Y12, Y2, Y2
	VPAND    (SI), Y2, Y2
	VMULPS   Y2, Y13, Y0
	VMULPS   (DX), Y14, Y1
	VADDPS   Y1, Y0, Y0
	VADDPS   Y15, Y0, Y0
	VMOVUPS  Y0, (DI)
	ADDQ     $32, SI
	ADDQ     $32, BX
	ADDQ     $32, DX
	ADDQ     $32, DI
	DECQ     CX
	JMP      mback

mbackdone:
	VZEROUPPER
	RET
