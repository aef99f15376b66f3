//go:build amd64 && !purego

#include "textflag.h"
#include "kern_amd64.h"

// func reluAddAVX2(dst, a, b *float32, n int)
//
// dst = max(a+b, 0) over n blocks of 8.
TEXT ·reluAddAVX2(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   a+8(FP), SI
	MOVQ   b+16(FP), DX
	MOVQ   n+24(FP), CX
	VXORPS Y15, Y15, Y15

reluadd:
	TESTQ   CX, CX
	JEQ     reluadddone
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	RELU8(Y0)
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JMP     reluadd

reluadddone:
	VZEROUPPER
	RET

// func reluAVX2(dst, x *float32, n int)
//
// dst = max(x, 0) over n blocks of 8.
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPS Y15, Y15, Y15

relu:
	TESTQ   CX, CX
	JEQ     reludone
	VMOVUPS (SI), Y0
	RELU8(Y0)
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JMP     relu

reludone:
	VZEROUPPER
	RET

// func add3AVX2(dst, a, b *float32, n int)
//
// dst = a + b over n blocks of 8.
TEXT ·add3AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX

add3:
	TESTQ   CX, CX
	JEQ     add3done
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JMP     add3

add3done:
	VZEROUPPER
	RET

// func reluGradAVX2(y, dy, dx *float32, n int)
//
// dx = dy where y's bits, as a signed integer, are positive, else 0 (Go's
// reluGradGo) over n blocks of 8.
TEXT ·reluGradAVX2(SB), NOSPLIT, $0-32
	MOVQ   y+0(FP), SI
	MOVQ   dy+8(FP), DX
	MOVQ   dx+16(FP), DI
	MOVQ   n+24(FP), CX
	VPXOR  Y15, Y15, Y15

relugrad:
	TESTQ    CX, CX
	JEQ      relugraddone
	VMOVUPS  (SI), Y0
	VPCMPGTD Y15, Y0, Y0
	VPAND    (DX), Y0, Y0
	VMOVUPS  Y0, (DI)
	ADDQ     $32, SI
	ADDQ     $32, DX
	ADDQ     $32, DI
	DECQ     CX
	JMP      relugrad

relugraddone:
	VZEROUPPER
	RET
