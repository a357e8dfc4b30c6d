#include "textflag.h"

// func prefetchWrite(ls []uintptr)
TEXT ·prefetchWrite(SB), NOSPLIT, $0-24
	MOVQ ls_base+0(FP), SI
	MOVQ ls_len+8(FP), CX
	TESTQ CX, CX
	JZ done
loop:
	MOVQ (SI), AX
	// PREFETCHW (AX), which Go's assembler does not name: 0F 0D /1. CPUs
	// without it (before Broadwell) run the encoding as a no-op.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	ADDQ $8, SI
	DECQ CX
	JNZ loop
done:
	RET
