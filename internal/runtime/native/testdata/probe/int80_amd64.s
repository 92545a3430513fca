#include "textflag.h"

// func int80(nr uintptr) uintptr
//
// Issues a 32-bit (i386 ABI) system call through the int 0x80 gate with no
// arguments. The seccomp filter sees AUDIT_ARCH_I386 and must kill the
// process before the call returns.
TEXT ·int80(SB), NOSPLIT, $0-16
	MOVQ nr+0(FP), AX
	XORQ BX, BX
	XORQ CX, CX
	XORQ DX, DX
	INT  $0x80
	MOVQ AX, ret+8(FP)
	RET
