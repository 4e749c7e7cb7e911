#include "textflag.h"

// func stringMasks(p *byte) (quote, backslash, control uint64)
// Requires AVX2. Every instruction is VEX-encoded: a legacy SSE one (MOVQ
// to an X register) made the whole function 100 times slower on the
// development machine (an SSE/AVX transition penalty).
TEXT ·stringMasks(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), AX
	VMOVDQU (AX), Y0
	VMOVDQU 32(AX), Y1

	MOVQ $0x22, BX
	VMOVQ BX, X2
	VPBROADCASTB X2, Y2
	MOVQ $0x5c, BX
	VMOVQ BX, X3
	VPBROADCASTB X3, Y3
	MOVQ $0x1f, BX
	VMOVQ BX, X4
	VPBROADCASTB X4, Y4

	VPCMPEQB Y0, Y2, Y5
	VPMOVMSKB Y5, CX
	VPCMPEQB Y1, Y2, Y6
	VPMOVMSKB Y6, DX
	SHLQ $32, DX
	ORQ DX, CX
	MOVQ CX, quote+8(FP)

	VPCMPEQB Y0, Y3, Y5
	VPMOVMSKB Y5, CX
	VPCMPEQB Y1, Y3, Y6
	VPMOVMSKB Y6, DX
	SHLQ $32, DX
	ORQ DX, CX
	MOVQ CX, backslash+16(FP)

	// x <= 0x1f exactly when min(x, 0x1f) == x (unsigned).
	VPMINUB Y0, Y4, Y5
	VPCMPEQB Y0, Y5, Y5
	VPMOVMSKB Y5, CX
	VPMINUB Y1, Y4, Y6
	VPCMPEQB Y1, Y6, Y6
	VPMOVMSKB Y6, DX
	SHLQ $32, DX
	ORQ DX, CX
	MOVQ CX, control+24(FP)

	VZEROUPPER
	RET
