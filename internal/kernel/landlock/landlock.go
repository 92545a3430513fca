package landlock

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrUnsupported means Landlock is not available: the kernel lacks it, or it is not enabled in
// the LSM configuration, or the OS is not Linux.
var ErrUnsupported = errors.New("unsupported")

// ErrNoNewPrivs means the calling thread has not set PR_SET_NO_NEW_PRIVS, which
// RestrictThread requires (even of callers that hold CAP_SYS_ADMIN).
var ErrNoNewPrivs = errors.New("no_new_privs is not set on the calling thread")

// Filesystem access rights, as in the kernel's include/uapi/linux/landlock.h
// (LANDLOCK_ACCESS_FS_*). Applied.HandledFS is a mask of these.
const (
	AccessFSExecute    uint64 = 1 << 0
	AccessFSWriteFile  uint64 = 1 << 1
	AccessFSReadFile   uint64 = 1 << 2
	AccessFSReadDir    uint64 = 1 << 3
	AccessFSRemoveDir  uint64 = 1 << 4
	AccessFSRemoveFile uint64 = 1 << 5
	AccessFSMakeChar   uint64 = 1 << 6
	AccessFSMakeDir    uint64 = 1 << 7
	AccessFSMakeReg    uint64 = 1 << 8
	AccessFSMakeSock   uint64 = 1 << 9
	AccessFSMakeFifo   uint64 = 1 << 10
	AccessFSMakeBlock  uint64 = 1 << 11
	AccessFSMakeSym    uint64 = 1 << 12
	AccessFSRefer      uint64 = 1 << 13 // ABI 2
	AccessFSTruncate   uint64 = 1 << 14 // ABI 3
	AccessFSIoctlDev   uint64 = 1 << 15 // ABI 5
)

// Scope flags (LANDLOCK_SCOPE_*), ABI 6.
const (
	scopeAbstractUnixSocket uint64 = 1 << 0
	scopeSignal             uint64 = 1 << 1
)

const (
	// accessFSv1 is every filesystem right of ABI 1.
	accessFSv1 = AccessFSExecute | AccessFSWriteFile | AccessFSReadFile | AccessFSReadDir |
		AccessFSRemoveDir | AccessFSRemoveFile | AccessFSMakeChar | AccessFSMakeDir |
		AccessFSMakeReg | AccessFSMakeSock | AccessFSMakeFifo | AccessFSMakeBlock | AccessFSMakeSym

	// accessFile is what the kernel accepts in a rule whose path is not a directory;
	// anything else there makes landlock_add_rule fail with EINVAL.
	accessFile = AccessFSExecute | AccessFSWriteFile | AccessFSReadFile | AccessFSTruncate |
		AccessFSIoctlDev

	accessReadOnly  = AccessFSExecute | AccessFSReadFile | AccessFSReadDir
	accessReadWrite = accessReadOnly | AccessFSWriteFile | AccessFSRemoveDir | AccessFSRemoveFile |
		AccessFSMakeChar | AccessFSMakeDir | AccessFSMakeReg | AccessFSMakeSock |
		AccessFSMakeFifo | AccessFSMakeBlock | AccessFSMakeSym | AccessFSRefer |
		AccessFSTruncate | AccessFSIoctlDev

	// accessWrite is every right that changes the filesystem's names or contents. A ruleset
	// that handles only these leaves reading, listing and executing to the thread's other
	// layers. Device ioctls are left out: they change no file, and the sandbox's own layer
	// already confines them.
	accessWrite = AccessFSWriteFile | AccessFSRemoveDir | AccessFSRemoveFile | AccessFSMakeChar |
		AccessFSMakeDir | AccessFSMakeReg | AccessFSMakeSock | AccessFSMakeFifo |
		AccessFSMakeBlock | AccessFSMakeSym | AccessFSRefer | AccessFSTruncate
)

// MinWritesABI is the first ABI whose write rights cover every change, which PrepareWrites
// needs: before ABI 3, truncate(2) is no Landlock right, so a write layer could not stop a
// truncation.
const MinWritesABI = 3

// Config says which paths stay reachable once the ruleset is enforced. Every filesystem right the
// running ABI knows is handled, so whatever no rule grants is denied; the zero Config therefore
// denies all filesystem access. Paths must be absolute; symlinks are followed.
type Config struct {
	// ReadOnly paths (directories or files) may be read, listed and executed. A ReadOnly path
	// that does not exist gets no rule and is listed in Applied.Skipped.
	ReadOnly []string
	// ReadWrite paths get everything ReadOnly allows plus write, create, remove, truncate,
	// refer (link/rename between allowed places) and ioctl on devices. A ReadWrite path that
	// does not exist is an error, as the caller clearly expects to use it.
	ReadWrite []string
	// Scope, when the ABI has scoping (6 and later), keeps signals and abstract unix socket
	// connections from reaching anything outside the new domain. On older ABIs nothing is
	// scoped and Applied.Scoped is false.
	Scope bool
}

// Applied says what was actually enforced.
type Applied struct {
	ABI       int      // the kernel's Landlock ABI version
	HandledFS uint64   // AccessFS* rights the ruleset handles: denied except where a rule grants them
	Scoped    bool     // signals and abstract unix sockets are scoped to the domain
	Skipped   []string // ReadOnly paths that did not exist and so got no rule
}

// String renders a for logs and audit records.
func (a Applied) String() string {
	s := fmt.Sprintf("landlock abi=%d fs=%s scoped=%t", a.ABI, FormatAccessFS(a.HandledFS), a.Scoped)
	if len(a.Skipped) > 0 {
		s += " skipped=" + strings.Join(a.Skipped, ",")
	}
	return s
}

var accessNames = []string{
	"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file",
	"make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym",
	"refer", "truncate", "ioctl_dev",
}

// FormatAccessFS names the rights in mask, joined by "|"; unknown bits are shown in hex.
func FormatAccessFS(mask uint64) string {
	var parts []string
	for i, name := range accessNames {
		if mask&(1<<i) != 0 {
			parts = append(parts, name)
			mask &^= 1 << i
		}
	}
	if mask != 0 {
		parts = append(parts, fmt.Sprintf("%#x", mask))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// handledFS is every filesystem right the given ABI knows. Network rights (ABI 4) are
// deliberately not handled yet; rights newer than this package are not handled either.
func handledFS(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	h := accessFSv1
	if abi >= 2 {
		h |= AccessFSRefer
	}
	if abi >= 3 {
		h |= AccessFSTruncate
	}
	if abi >= 5 {
		h |= AccessFSIoctlDev
	}
	return h
}

// scopedFor is the scope mask to request at abi.
func scopedFor(abi int, want bool) uint64 {
	if !want || abi < 6 {
		return 0
	}
	return scopeAbstractUnixSocket | scopeSignal
}

// rulesetAttrSize is how much of struct landlock_ruleset_attr to pass at abi: the struct grew
// handled_access_net in ABI 4 and scoped in ABI 6, and a kernel rejects a size it does not know
// (E2BIG if the extra bytes are non-zero), so pass only what the running ABI understands.
func rulesetAttrSize(abi int) uintptr {
	switch {
	case abi >= 6:
		return 24
	case abi >= 4:
		return 16
	default:
		return 8
	}
}

// ruleAccess is the allowed_access of a path-beneath rule: the rights of the rule kind, limited
// to what the ruleset handles (the kernel rejects unhandled rights) and, for anything that is
// not a directory, to the rights that apply to files.
func ruleAccess(handled uint64, readWrite, isDir bool) uint64 {
	a := accessReadOnly
	if readWrite {
		a = accessReadWrite
	}
	a &= handled
	if !isDir {
		a &= accessFile
	}
	return a
}

// checkPaths rejects what would make a rule ambiguous: empty or relative paths.
func checkPaths(cfg Config) error {
	for _, list := range [][]string{cfg.ReadOnly, cfg.ReadWrite} {
		for _, p := range list {
			if p == "" || !filepath.IsAbs(p) {
				return fmt.Errorf("landlock: path %q is not absolute", p)
			}
		}
	}
	return nil
}
