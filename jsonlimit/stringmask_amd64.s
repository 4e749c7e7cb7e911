#include "textflag.h"

// shortLo and shortHi classify a byte by its low and its high nibble
// (VPSHUFB lookups, the same 16 bytes in both lanes): the two entries
// share a bit exactly for the bytes that may follow a backslash as a short
// escape, " \ / b f n r t. Bits: 1 for high nibble 2 (" /), 2 for 5 (\),
// 4 for 6 (b f n), 8 for 7 (r t).
DATA shortLo<>+0(SB)/8, $0x00040008000d0000
DATA shortLo<>+8(SB)/8, $0x0104000200000000
DATA shortLo<>+16(SB)/8, $0x00040008000d0000
DATA shortLo<>+24(SB)/8, $0x0104000200000000
GLOBL shortLo<>(SB), RODATA|NOPTR, $32

DATA shortHi<>+0(SB)/8, $0x0804020000010000
DATA shortHi<>+8(SB)/8, $0x0000000000000000
DATA shortHi<>+16(SB)/8, $0x0804020000010000
DATA shortHi<>+24(SB)/8, $0x0000000000000000
GLOBL shortHi<>(SB), RODATA|NOPTR, $32

// func stringMasks(p *byte) (quote, backslash, control, short uint64)
// Requires AVX2. Every instruction is VEX-encoded: a legacy SSE one (MOVQ
// to an X register) made the whole function 100 times slower on the
// development machine (an SSE/AVX transition penalty).
TEXT ·stringMasks(SB), NOSPLIT, $0-40
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

	// short escapes: shortLo[x&15] & shortHi[x>>4] != 0.
	VMOVDQU shortLo<>(SB), Y7
	VMOVDQU shortHi<>(SB), Y8
	MOVQ $0x0f, BX
	VMOVQ BX, X9
	VPBROADCASTB X9, Y9
	VPXOR Y12, Y12, Y12

	VPAND Y0, Y9, Y10
	VPSHUFB Y10, Y7, Y10
	VPSRLW $4, Y0, Y11
	VPAND Y11, Y9, Y11
	VPSHUFB Y11, Y8, Y11
	VPAND Y10, Y11, Y10
	VPCMPEQB Y12, Y10, Y10
	VPMOVMSKB Y10, CX

	VPAND Y1, Y9, Y10
	VPSHUFB Y10, Y7, Y10
	VPSRLW $4, Y1, Y11
	VPAND Y11, Y9, Y11
	VPSHUFB Y11, Y8, Y11
	VPAND Y10, Y11, Y10
	VPCMPEQB Y12, Y10, Y10
	VPMOVMSKB Y10, DX
	SHLQ $32, DX
	ORQ DX, CX
	NOTQ CX
	MOVQ CX, short+32(FP)

	VZEROUPPER
	RET
