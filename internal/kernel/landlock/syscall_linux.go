package landlock

// This file holds the raw Landlock system calls and the only unsafe code of the package.

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6; rulesetAttrSize says how much of it
// a given ABI reads.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64 // ABI 4; always 0 here
	scoped           uint64 // ABI 6
}

// pathBeneathAttr is struct landlock_path_beneath_attr. The kernel's struct is packed (12 bytes,
// parent_fd at offset 8); this one has the same offsets and only trailing padding, which the
// kernel does not read.
type pathBeneathAttr struct {
	allowedAccess uint64
	parentFd      int32
	_             [4]byte
}

const (
	createRulesetVersion = 1 << 0 // LANDLOCK_CREATE_RULESET_VERSION
	rulePathBeneath      = 1      // LANDLOCK_RULE_PATH_BENEATH
)

func abiVersion() (int, unix.Errno) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	return int(v), errno
}

func createRuleset(attr *rulesetAttr, size uintptr) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(attr)), size, 0)
	runtime.KeepAlive(attr)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func addPathBeneathRule(rulesetFd int, attr *pathBeneathAttr) error {
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFd), rulePathBeneath,
		uintptr(unsafe.Pointer(attr)), 0, 0, 0)
	runtime.KeepAlive(attr)
	if errno != 0 {
		return errno
	}
	return nil
}

// restrictSelf enforces the ruleset on the calling OS thread only (flags 0).
func restrictSelf(rulesetFd int) error {
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFd), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
