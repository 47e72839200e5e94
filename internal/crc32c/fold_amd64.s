#include "textflag.h"

// CRC_REST runs the CRC32 instruction over the CX octets at SI on the
// register AX: 8 at a time, then 4, then one by one.
#define CRC_REST \
rest8: \
	CMPQ CX, $8 \
	JB   rest4 \
	CRC32Q (SI), AX \
	ADDQ $8, SI \
	SUBQ $8, CX \
	JMP  rest8 \
rest4: \
	CMPQ CX, $4 \
	JB   rest1 \
	CRC32L (SI), AX \
	ADDQ $4, SI \
	SUBQ $4, CX \
rest1: \
	TESTQ CX, CX \
	JZ   restDone \
	CRC32B (SI), AX \
	INCQ SI \
	DECQ CX \
	JMP  rest1 \
restDone:

// func foldAVX512(crc uint32, p []byte, k *[6]uint64) uint32
//
// p is at least 256 octets long, of any length beyond.
// Registers: SI data, CX octets left, DX constants.
// Z0-Z3 are four accumulators of four 128-bit lanes each (256 octets);
// a fold of lane A by the pair (K0, K1) is clmul(A.lo, K0) ^ clmul(A.hi, K1)
// (crc32c.go: foldPair).
TEXT ·foldAVX512(SB), NOSPLIT, $0-44
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	NOTL AX
	VMOVDQU64 (SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVD AX, X4
	VPXORQ Z4, Z0, Z0
	ADDQ $256, SI
	SUBQ $256, CX

	VBROADCASTI32X4 (DX), Z8

loop256:
	CMPQ CX, $256
	JB   fold4
	VPCLMULQDQ $0x00, Z8, Z0, Z4
	VPCLMULQDQ $0x11, Z8, Z0, Z0
	VPCLMULQDQ $0x00, Z8, Z1, Z5
	VPCLMULQDQ $0x11, Z8, Z1, Z1
	VPCLMULQDQ $0x00, Z8, Z2, Z6
	VPCLMULQDQ $0x11, Z8, Z2, Z2
	VPCLMULQDQ $0x00, Z8, Z3, Z7
	VPCLMULQDQ $0x11, Z8, Z3, Z3
	VPTERNLOGD $0x96, (SI), Z4, Z0
	VPTERNLOGD $0x96, 64(SI), Z5, Z1
	VPTERNLOGD $0x96, 128(SI), Z6, Z2
	VPTERNLOGD $0x96, 192(SI), Z7, Z3
	ADDQ $256, SI
	SUBQ $256, CX
	JMP  loop256

fold4:
	// Fold Z0 into Z1, Z1 into Z2, Z2 into Z3 (64 octets each).
	VBROADCASTI32X4 16(DX), Z9
	VPCLMULQDQ $0x00, Z9, Z0, Z4
	VPCLMULQDQ $0x11, Z9, Z0, Z5
	VPTERNLOGD $0x96, Z4, Z5, Z1
	VPCLMULQDQ $0x00, Z9, Z1, Z4
	VPCLMULQDQ $0x11, Z9, Z1, Z5
	VPTERNLOGD $0x96, Z4, Z5, Z2
	VPCLMULQDQ $0x00, Z9, Z2, Z4
	VPCLMULQDQ $0x11, Z9, Z2, Z5
	VPTERNLOGD $0x96, Z4, Z5, Z3

loop64:
	CMPQ CX, $64
	JB   fold1
	VPCLMULQDQ $0x00, Z9, Z3, Z4
	VPCLMULQDQ $0x11, Z9, Z3, Z3
	VPTERNLOGD $0x96, (SI), Z4, Z3
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  loop64

fold1:
	// The four lanes of Z3, 16 octets apart, into one.
	VMOVDQU 32(DX), X10
	VEXTRACTI32X4 $1, Z3, X1
	VEXTRACTI32X4 $2, Z3, X2
	VEXTRACTI32X4 $3, Z3, X11
	VPCLMULQDQ $0x00, X10, X3, X4
	VPCLMULQDQ $0x11, X10, X3, X5
	VPXOR X4, X1, X1
	VPXOR X5, X1, X1
	VPCLMULQDQ $0x00, X10, X1, X4
	VPCLMULQDQ $0x11, X10, X1, X5
	VPXOR X4, X2, X2
	VPXOR X5, X2, X2
	VPCLMULQDQ $0x00, X10, X2, X4
	VPCLMULQDQ $0x11, X10, X2, X5
	VPXOR X4, X11, X11
	VPXOR X5, X11, X11
loop16:
	// Whole 16-octet blocks left: one lane, folded as above.
	CMPQ CX, $16
	JB   tail
	VPCLMULQDQ $0x00, X10, X11, X4
	VPCLMULQDQ $0x11, X10, X11, X5
	VMOVDQU (SI), X6
	VPXOR X4, X6, X6
	VPXOR X5, X6, X11
	ADDQ $16, SI
	SUBQ $16, CX
	JMP  loop16

tail:
	// The CRC of the folded 16 octets from a zero register, then of the
	// last 0-15 octets with the same register.
	VMOVQ X11, R8
	VPEXTRQ $1, X11, R9
	XORL AX, AX
	CRC32Q R8, AX
	CRC32Q R9, AX
	CRC_REST
	NOTL AX
	MOVL AX, ret+40(FP)
	VZEROUPPER
	RET

// func shortSSE42(crc uint32, p []byte) uint32
//
// hash/crc32's result for a short p with the CRC32 instruction alone, 8
// octets at a time: no alignment prologue, no three-way split.
TEXT ·shortSSE42(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	NOTL AX
	CRC_REST
	NOTL AX
	MOVL AX, ret+32(FP)
	RET
