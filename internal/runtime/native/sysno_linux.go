//go:build linux && !386 && !arm

package native

import "golang.org/x/sys/unix"

// The 32-bit-id forms of setresuid and setresgid.
const (
	sysSetresuid = unix.SYS_SETRESUID
	sysSetresgid = unix.SYS_SETRESGID
)
