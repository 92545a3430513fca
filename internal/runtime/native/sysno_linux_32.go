//go:build linux && (386 || arm)

package native

import "golang.org/x/sys/unix"

// The 32-bit-id forms of setresuid and setresgid (the plain ones take
// 16-bit ids here).
const (
	sysSetresuid = unix.SYS_SETRESUID32
	sysSetresgid = unix.SYS_SETRESGID32
)
