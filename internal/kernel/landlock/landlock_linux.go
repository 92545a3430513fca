package landlock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// ABI reports the Landlock ABI version the kernel offers, or an error wrapping ErrUnsupported
// when the kernel has no Landlock or it is not enabled.
func ABI() (int, error) {
	v, errno := abiVersion()
	switch {
	case errno == unix.ENOSYS || errno == unix.EOPNOTSUPP:
		return 0, fmt.Errorf("landlock: %w: %v", ErrUnsupported, errno)
	case errno != 0:
		return 0, fmt.Errorf("landlock: query ABI version: %w", errno)
	case v < 1:
		return 0, fmt.Errorf("landlock: %w: ABI version %d", ErrUnsupported, v)
	}
	return v, nil
}

// RestrictThread enforces cfg on the calling OS thread with the best rights the running ABI
// supports, down to ABI 1, and reports in Applied exactly what it enforced: rights an older ABI
// lacks (for instance truncate before ABI 3) stay unrestricted, and HandledFS shows it. The
// restriction is inherited by every process the thread forks or execs afterwards.
//
// The caller must have called runtime.LockOSThread and then set PR_SET_NO_NEW_PRIVS on that
// thread; without no_new_privs it returns ErrNoNewPrivs. On success RestrictThread takes one more
// runtime.LockOSThread that it never releases, so the calling goroutine stays on the restricted
// thread for good and the runtime discards the thread when the goroutine exits.
//
// Missing paths: a ReadOnly path that does not exist is skipped and listed in Applied.Skipped; a
// ReadWrite path that does not exist is an error matching fs.ErrNotExist. Any error leaves the
// thread unrestricted. It returns an error wrapping ErrUnsupported when the kernel has no
// Landlock.
func RestrictThread(cfg Config) (Applied, error) {
	if err := checkPaths(cfg); err != nil {
		return Applied{}, err
	}
	if _, err := ABI(); err != nil {
		return Applied{}, err
	}
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil {
		return Applied{}, fmt.Errorf("landlock: read no_new_privs: %w", err)
	} else if nnp != 1 {
		return Applied{}, fmt.Errorf("landlock: %w", ErrNoNewPrivs)
	}
	r, err := Prepare(cfg)
	if err != nil {
		return Applied{}, err
	}
	defer r.Close()
	return r.RestrictThread()
}

// Ruleset is a prepared ruleset: the paths are resolved and the rules
// added once, so that restricting a thread later costs one system call.
// It holds a close-on-exec descriptor until Close.
type Ruleset struct {
	fd      int
	applied Applied
}

// Prepare resolves cfg into a Ruleset without restricting anything.
// Returns ErrUnsupported (wrapped) when the kernel has no Landlock.
func Prepare(cfg Config) (*Ruleset, error) {
	if err := checkPaths(cfg); err != nil {
		return nil, err
	}
	abi, err := ABI()
	if err != nil {
		return nil, err
	}
	applied := Applied{ABI: abi, HandledFS: handledFS(abi)}
	attr := rulesetAttr{handledAccessFS: applied.HandledFS, scoped: scopedFor(abi, cfg.Scope)}
	applied.Scoped = attr.scoped != 0
	rulesetFd, err := createRuleset(&attr, rulesetAttrSize(abi))
	if err != nil {
		return nil, fmt.Errorf("landlock: create ruleset (abi %d): %w", abi, err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(rulesetFd)
		}
	}()
	for _, p := range cfg.ReadOnly {
		added, err := addRule(rulesetFd, p, applied.HandledFS, false)
		if err != nil {
			return nil, err
		}
		if !added {
			applied.Skipped = append(applied.Skipped, p)
		}
	}
	for _, p := range cfg.ReadWrite {
		added, err := addRule(rulesetFd, p, applied.HandledFS, true)
		if err != nil {
			return nil, err
		}
		if !added {
			return nil, fmt.Errorf("landlock: read-write path: %w",
				&fs.PathError{Op: "open", Path: p, Err: unix.ENOENT})
		}
	}
	ok = true
	return &Ruleset{fd: rulesetFd, applied: applied}, nil
}

// Applied is what RestrictThread enforces with this ruleset.
func (r *Ruleset) Applied() Applied { return r.applied }

// Close releases the ruleset's descriptor. Threads already restricted
// stay restricted.
func (r *Ruleset) Close() error { return unix.Close(r.fd) }

// RestrictThread enforces the ruleset on the CALLING OS THREAD, which it
// locks (runtime.LockOSThread) and never unlocks on success: the goroutine
// must end on that thread, which Go then discards. no_new_privs must be
// set on the thread. On error the thread is unrestricted and unlocked.
func (r *Ruleset) RestrictThread() (Applied, error) {
	runtime.LockOSThread()
	restricted := false
	defer func() {
		if !restricted {
			runtime.UnlockOSThread()
		}
	}()
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return Applied{}, fmt.Errorf("landlock: read no_new_privs: %w", err)
	}
	if nnp != 1 {
		return Applied{}, fmt.Errorf("landlock: %w", ErrNoNewPrivs)
	}
	if err := restrictSelf(r.fd); err != nil {
		return Applied{}, fmt.Errorf("landlock: restrict self: %w", err)
	}
	restricted = true
	return r.applied, nil
}

// PrepareWrites makes a ruleset to stack on a thread's existing domain that confines where the
// filesystem may be changed and nothing else: it handles only the write rights (writing,
// truncating, creating, removing, renaming and linking), so reading, listing and executing stay
// exactly what the thread's other layers allow, and it grants them beneath each of places only.
// A place is an open descriptor (O_PATH is enough), so that the caller decides how its path was
// resolved; a directory gets every write right beneath it, anything else only write and
// truncate. The descriptors stay the caller's.
//
// Refer (linking or renaming into another directory) is granted only beneath places, so nothing
// can be moved or linked between a place and the rest of the filesystem: the kernel refuses
// with EACCES, or EXDEV when only refer is missing.
//
// It needs ABI 3 (truncate); an older kernel, or none, gives an error wrapping ErrUnsupported.
func PrepareWrites(places []*os.File) (*Ruleset, error) {
	abi, err := ABI()
	if err != nil {
		return nil, err
	}
	if abi < MinWritesABI {
		return nil, fmt.Errorf("landlock: %w: ABI %d cannot confine truncation (write rules need ABI %d)",
			ErrUnsupported, abi, MinWritesABI)
	}
	applied := Applied{ABI: abi, HandledFS: handledFS(abi) & accessWrite}
	attr := rulesetAttr{handledAccessFS: applied.HandledFS}
	rulesetFd, err := createRuleset(&attr, rulesetAttrSize(abi))
	if err != nil {
		return nil, fmt.Errorf("landlock: create write ruleset (abi %d): %w", abi, err)
	}
	for _, f := range places {
		if err := addRuleFD(rulesetFd, int(f.Fd()), f.Name(), applied.HandledFS); err != nil {
			unix.Close(rulesetFd)
			return nil, err
		}
		runtime.KeepAlive(f)
	}
	return &Ruleset{fd: rulesetFd, applied: applied}, nil
}

func addRule(rulesetFd int, path string, handled uint64, readWrite bool) (bool, error) {
	fd, err := openPath(path)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("landlock: %w", &fs.PathError{Op: "open", Path: path, Err: err})
	}
	defer unix.Close(fd)
	return true, addRuleFD(rulesetFd, fd, path, ruleAccess(handled, readWrite, true))
}

// addRuleFD grants dirAccess beneath the directory open at fd, or its file rights alone when fd
// is not a directory (the kernel refuses directory rights on anything else).
func addRuleFD(rulesetFd, fd int, name string, dirAccess uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: %w", &fs.PathError{Op: "fstat", Path: name, Err: err})
	}
	access := dirAccess
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= accessFile
	}
	if access == 0 {
		return nil
	}
	attr := pathBeneathAttr{allowedAccess: access, parentFd: int32(fd)}
	if err := addPathBeneathRule(rulesetFd, &attr); err != nil {
		return fmt.Errorf("landlock: add rule %s (%s): %w", name, FormatAccessFS(access), err)
	}
	return nil
}

func openPath(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
