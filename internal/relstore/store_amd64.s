//go:build amd64 && gc && !race

#include "textflag.h"

// func storeRelease(p *uint64, v uint64)
// A plain aligned MOV: atomic on amd64, and ordered after every earlier
// store by total store order.
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
