// Package pathwalk opens a path the way openat2(2) does with the
// resolution flags airlock relies on (RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS,
// RESOLVE_NO_MAGICLINKS), also on kernels that lack openat2: gVisor before
// 2023 (Debian 12's runsc) answers ENOSYS. Only the agent and the tarball
// extractor use it.
//
// Where the kernel has openat2, Openat2 is exactly unix.Openat2. Otherwise
// it walks the path one element at a time, each opened with O_NOFOLLOW
// relative to the descriptor of its parent, and follows symlinks itself:
//   - with RESOLVE_IN_ROOT, ".." never climbs above the starting directory
//     (it returns along the walk's own descriptors, so a directory renamed
//     meanwhile cannot lead out) and absolute symlink targets restart at
//     that directory;
//   - with RESOLVE_NO_SYMLINKS any symlink is refused (ELOOP);
//   - with RESOLVE_NO_MAGICLINKS any symlink on procfs is refused (ELOOP).
//     That is stricter than the kernel (which still follows /proc/self),
//     never looser: every magic link lives on procfs.
//
// Other resolution flags are refused with ENOSYS rather than ignored.
package pathwalk

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// maxLinks is how many symlinks one walk may follow (Linux: 40).
const maxLinks = 40

const supported = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Openat2 is openat2(2), with a user-space walk where the kernel has none.
// EINTR is retried, and so is EAGAIN: with RESOLVE_IN_ROOT (or _BENEATH)
// the kernel answers EAGAIN when any rename or mount anywhere on the host
// raced a ".." step of the walk, and openat2(2) says to retry. After
// MaxRaceRetries such answers in a row it gives up with a *RaceError
// (which matches unix.EAGAIN under errors.Is). Every other error is the
// bare unix.Errno, as from unix.Openat2.
func Openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	races := 0
	for {
		fd, err := unix.Openat2(dirfd, path, how)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if races++; races >= MaxRaceRetries {
				return -1, &RaceError{Path: path, Tries: races}
			}
			if races > 8 {
				// a storm of renames: let it pass rather than spin
				time.Sleep(time.Duration(races) * time.Microsecond)
			}
			continue
		case unix.ENOSYS:
			return Walk(dirfd, path, how)
		}
		return fd, err
	}
}

// MaxRaceRetries bounds how many EAGAIN answers Openat2 retries.
const MaxRaceRetries = 128

// RaceError says that openat2 kept answering EAGAIN: renames or mounts
// elsewhere on the host raced every attempt at resolving Path.
type RaceError struct {
	Path  string
	Tries int
}

func (e *RaceError) Error() string {
	return fmt.Sprintf("resolving %q: renames or mounts on the host raced the path walk %d times in a row (openat2: EAGAIN); try again", e.Path, e.Tries)
}

// Unwrap lets errors.Is(err, unix.EAGAIN) hold.
func (e *RaceError) Unwrap() error { return unix.EAGAIN }

// Walk is the user-space resolution Openat2 falls back to; exported so
// that it can be tested on kernels that do have openat2.
func Walk(dirfd int, path string, how *unix.OpenHow) (int, error) {
	if how.Resolve&^uint64(supported) != 0 {
		return -1, unix.ENOSYS
	}
	if path == "" {
		return -1, unix.ENOENT
	}
	w := walker{how: how, inRoot: how.Resolve&unix.RESOLVE_IN_ROOT != 0}
	defer w.closeAll()
	startDir, startName := dirfd, "."
	if !w.inRoot && strings.HasPrefix(path, "/") {
		startDir, startName = unix.AT_FDCWD, "/"
	}
	fd, err := openPath(startDir, startName)
	if err != nil {
		return -1, err
	}
	w.stack = append(w.stack, fd)
	return w.walk(path)
}

type walker struct {
	how    *unix.OpenHow
	inRoot bool
	// stack holds the descriptors of the directories walked through; its
	// bottom is the root of the walk.
	stack []int
	links int
}

func (w *walker) top() int { return w.stack[len(w.stack)-1] }

func (w *walker) closeAll() {
	for _, fd := range w.stack {
		unix.Close(fd)
	}
	w.stack = nil
}

// toRoot drops every directory above the walk's root.
func (w *walker) toRoot() {
	for len(w.stack) > 1 {
		unix.Close(w.stack[len(w.stack)-1])
		w.stack = w.stack[:len(w.stack)-1]
	}
}

func split(p string) []string {
	var out []string
	for _, el := range strings.Split(p, "/") {
		if el != "" && el != "." {
			out = append(out, el)
		}
	}
	// a trailing slash asks for a directory
	if strings.HasSuffix(p, "/") && len(out) > 0 {
		out = append(out, ".")
	}
	return out
}

func (w *walker) walk(path string) (int, error) {
	if strings.HasPrefix(path, "/") {
		w.toRoot()
	}
	elems := split(path)
	for len(elems) > 0 {
		name := elems[0]
		elems = elems[1:]
		last := len(elems) == 0
		switch {
		case name == "." && last:
			fd, _, err := w.final(".")
			return fd, err
		case name == "..":
			if w.inRoot {
				if len(w.stack) > 1 {
					unix.Close(w.stack[len(w.stack)-1])
					w.stack = w.stack[:len(w.stack)-1]
				}
			} else {
				fd, err := openPath(w.top(), "..")
				if err != nil {
					return -1, err
				}
				w.stack = append(w.stack, fd)
			}
			if last {
				fd, _, err := w.final(".")
				return fd, err
			}
			continue
		case last:
			fd, isLink, err := w.final(name)
			if !isLink {
				return fd, err
			}
		default:
			fd, err := openPath(w.top(), name)
			if err != nil {
				return -1, err
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return -1, err
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				w.stack = append(w.stack, fd)
				continue
			case unix.S_IFLNK:
				unix.Close(fd)
			default:
				unix.Close(fd)
				return -1, unix.ENOTDIR
			}
		}
		// name is a symlink to follow
		target, err := w.link(name)
		if err != nil {
			return -1, err
		}
		if strings.HasPrefix(target, "/") {
			if w.inRoot {
				w.toRoot()
			} else {
				w.closeAll()
				fd, err := openPath(unix.AT_FDCWD, "/")
				if err != nil {
					return -1, err
				}
				w.stack = append(w.stack, fd)
			}
		}
		elems = append(split(target), elems...)
	}
	fd, _, err := w.final(".")
	return fd, err
}

// final opens the last element with the caller's flags, never following
// a symlink there itself: isLink says it is one the walk must follow.
func (w *walker) final(name string) (fd int, isLink bool, err error) {
	flags := w.how.Flags | unix.O_CLOEXEC
	follow := flags&unix.O_NOFOLLOW == 0
	for {
		fd, err = unix.Openat(w.top(), name, int(flags|unix.O_NOFOLLOW), uint32(w.how.Mode))
		if err != unix.EINTR {
			break
		}
	}
	if !follow || name == "." {
		return fd, false, err
	}
	if err == unix.ELOOP || err == unix.ENOTDIR {
		// a symlink (with O_DIRECTORY it fails as "not a directory")
		var st unix.Stat_t
		if unix.Fstatat(w.top(), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, true, nil
		}
		return -1, false, err
	}
	if err != nil || flags&unix.O_PATH == 0 {
		return fd, false, err
	}
	// O_PATH|O_NOFOLLOW opens a symlink itself instead of failing
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, false, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, true, nil
	}
	return fd, false, nil
}

// link reads the symlink name in the current directory, if the flags
// allow following it.
func (w *walker) link(name string) (string, error) {
	if w.how.Resolve&unix.RESOLVE_NO_SYMLINKS != 0 {
		return "", unix.ELOOP
	}
	if w.how.Resolve&unix.RESOLVE_NO_MAGICLINKS != 0 {
		var sfs unix.Statfs_t
		if err := unix.Fstatfs(w.top(), &sfs); err != nil {
			return "", err
		}
		if sfs.Type == unix.PROC_SUPER_MAGIC {
			return "", unix.ELOOP
		}
	}
	if w.links++; w.links > maxLinks {
		return "", unix.ELOOP
	}
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(w.top(), name, buf)
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", unix.ENOENT
	}
	return string(buf[:n]), nil
}

func openPath(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// OpenRegular opens name in dirfd with flags and mode, never following a
// symlink at name, and refuses anything but a regular file
// (syscall.EINVAL wrapped in a PathError). It opens with O_NONBLOCK and
// O_NOCTTY, so that a FIFO or a terminal put at name by sandbox code can
// neither block the caller in open(2) nor become its terminal, checks the
// type of what it opened, and then clears O_NONBLOCK. A FIFO opened for
// writing with no reader fails with ENXIO.
func OpenRegular(dirfd int, name string, flags int, mode uint32) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("not a regular file: %w", unix.EINVAL)}
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
