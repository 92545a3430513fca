package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/kernel/pathwalk"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// The file operations resolve every path with RESOLVE_IN_ROOT |
// RESOLVE_NO_MAGICLINKS in the sandbox's root directory: "..", absolute
// symlinks and /proc links stay inside it (what the fake does confine;
// its commands it does not). They run as the calling user, which is
// also the command user.

const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// fileErr names the failed operation and classifies errno as errdefs.
func fileErr(op, p string, err error) error {
	kind := errdefs.ErrInvalid
	switch {
	case errors.Is(err, unix.ENOENT):
		kind = errdefs.ErrNotFound
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		kind = errdefs.ErrDenied
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.ESTALE): // ESTALE: destroyed
		kind = errdefs.ErrConflict
	case errors.Is(err, unix.EFBIG), errors.Is(err, unix.ENOSPC):
		kind = errdefs.ErrLimitExceeded
	}
	if errors.Is(err, kind) {
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	return fmt.Errorf("%s %s: %w: %w", op, p, err, kind)
}

func cleanPath(p string) (string, error) {
	if p == "" || !path.IsAbs(p) || strings.IndexByte(p, 0) >= 0 || len(p) > 4096 {
		return "", fmt.Errorf("%q: want an absolute path: %w", p, errdefs.ErrInvalid)
	}
	return path.Clean(p), nil
}

// open opens p, resolved in the sandbox's root.
func (s *sandbox) open(p string, flags uint64, mode uint64) (int, error) {
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NOCTTY
	}
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags}
	s.fdMu.RLock()
	defer s.fdMu.RUnlock()
	if s.rootFD < 0 {
		return -1, unix.ESTALE
	}
	return pathwalk.Openat2(s.rootFD, p, &how)
}

// parent opens p's parent directory and returns it with p's last element.
func (s *sandbox) parent(p string) (int, string, error) {
	if p == "/" {
		return -1, "", fmt.Errorf("the root itself: %w", errdefs.ErrInvalid)
	}
	dir, base := path.Split(p)
	fd, err := s.open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", fileErr("open", dir, err)
	}
	return fd, base, nil
}

func info(name, p string, st *unix.Stat_t, target string) runtime.FileInfo {
	fi := runtime.FileInfo{Name: name, Path: p, Size: st.Size, Mode: st.Mode & 0o7777, UID: int(st.Uid), GID: int(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()), Target: target, Type: "other"}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		fi.Type = "file"
	case unix.S_IFDIR:
		fi.Type = "dir"
	case unix.S_IFLNK:
		fi.Type = "symlink"
	}
	return fi
}

func lstatAt(dirfd int, base, full string) (runtime.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return runtime.FileInfo{}, fileErr("stat", full, err)
	}
	target := ""
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dirfd, base, buf); err == nil {
			target = string(buf[:n])
		}
	}
	return info(base, full, &st, target), nil
}

func (s *sandbox) Stat(ctx context.Context, p string) (runtime.FileInfo, error) {
	p, err := cleanPath(p)
	if err != nil {
		return runtime.FileInfo{}, err
	}
	if p == "/" {
		fd, err := s.open("/", unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return runtime.FileInfo{}, fileErr("stat", p, err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return runtime.FileInfo{}, fileErr("stat", p, err)
		}
		return info("/", "/", &st, ""), nil
	}
	pfd, base, err := s.parent(p)
	if err != nil {
		return runtime.FileInfo{}, err
	}
	defer unix.Close(pfd)
	return lstatAt(pfd, base, p)
}

func (s *sandbox) List(ctx context.Context, dir string) ([]runtime.FileInfo, error) {
	dir, err := cleanPath(dir)
	if err != nil {
		return nil, err
	}
	fd, err := s.open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fileErr("list", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fileErr("list", dir, err)
	}
	var out []runtime.FileInfo
	for _, n := range names {
		fi, err := lstatAt(fd, n, path.Join(dir, n))
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, fi)
	}
	return out, nil
}

func (s *sandbox) ReadFile(ctx context.Context, p string, w io.Writer, max int64) (int64, error) {
	p, err := cleanPath(p)
	if err != nil {
		return 0, err
	}
	fd, err := s.open(p, unix.O_RDONLY, 0)
	if err != nil {
		return 0, fileErr("read", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fileErr("read", p, err)
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("read %s: not a regular file: %w", p, errdefs.ErrInvalid)
	}
	if max > 0 && st.Size() > max {
		return 0, fmt.Errorf("read %s: %d bytes, over the maximum of %d: %w", p, st.Size(), max, errdefs.ErrLimitExceeded)
	}
	var r io.Reader = f
	if max > 0 {
		r = io.LimitReader(f, max)
	}
	return io.Copy(w, r)
}

// WriteFile writes beside the target and renames over it once r is
// whole, so that a failed write leaves nothing; it never replaces a
// symlink (a write through one is refused).
func (s *sandbox) WriteFile(ctx context.Context, p string, r io.Reader, mode uint32, parents bool) (int64, error) {
	p, err := cleanPath(p)
	if err != nil {
		return 0, err
	}
	if parents {
		if err := s.mkdirAll(path.Dir(p)); err != nil {
			return 0, err
		}
	}
	pfd, base, err := s.parent(p)
	if err != nil {
		return 0, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, fileErr("write", p, unix.ELOOP)
	}
	tmp := ".airlock-write-" + token()
	fd, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, fileErr("write", p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Chmod(fs.FileMode(mode & 0o777))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(pfd, tmp, pfd, base)
	}
	if err != nil {
		_ = unix.Unlinkat(pfd, tmp, 0)
		return 0, fileErr("write", p, err)
	}
	return n, nil
}

func (s *sandbox) Mkdir(ctx context.Context, p string, parents bool) error {
	p, err := cleanPath(p)
	if err != nil {
		return err
	}
	if parents {
		return s.mkdirAll(p)
	}
	pfd, base, err := s.parent(p)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, base, 0o755); err != nil {
		return fileErr("mkdir", p, err)
	}
	return nil
}

// mkdirAll makes p and its missing parents, each resolved in root.
func (s *sandbox) mkdirAll(p string) error {
	cur := "/"
	for _, el := range strings.Split(strings.Trim(p, "/"), "/") {
		if el == "" {
			continue
		}
		pfd, err := s.open(cur, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return fileErr("mkdir", cur, err)
		}
		err = unix.Mkdirat(pfd, el, 0o755)
		unix.Close(pfd)
		cur = path.Join(cur, el)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fileErr("mkdir", cur, err)
		}
	}
	fd, err := s.open(cur, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return fileErr("mkdir", cur, err)
	}
	unix.Close(fd)
	return nil
}

func (s *sandbox) Remove(ctx context.Context, p string, recursive bool) error {
	p, err := cleanPath(p)
	if err != nil {
		return err
	}
	pfd, base, err := s.parent(p)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if recursive {
		err = removeTree(pfd, base)
	} else if err = unix.Unlinkat(pfd, base, 0); errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return fileErr("remove", p, err)
	}
	return nil
}

// removeTree removes name in dirfd and, if a directory (never followed
// through a link), everything under it.
func removeTree(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if !errors.Is(err, unix.EISDIR) {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	for _, n := range names {
		if err == nil {
			err = removeTree(fd, n)
		}
	}
	f.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// procDir opens dir in root and names it through /proc/self/fd, for the
// tarball package's path-based walk (which never follows a link below
// it); close the returned file when done.
func (s *sandbox) procDir(dir string) (*os.File, string, error) {
	dir, err := cleanPath(dir)
	if err != nil {
		return nil, "", err
	}
	fd, err := s.open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", fileErr("open", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), "/proc/self/fd/" + strconv.Itoa(fd) + "/", nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (s *sandbox) Tar(ctx context.Context, dir string, w io.Writer) (int64, error) {
	f, at, err := s.procDir(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cw := &countWriter{w: w}
	if err := tarball.WriteDir(cw, at); err != nil {
		return cw.n, fmt.Errorf("tar %s: %w", dir, err)
	}
	return cw.n, nil
}

func (s *sandbox) Untar(ctx context.Context, dir string, r io.Reader) error {
	f, at, err := s.procDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := tarball.Extract(r, at, tarball.ExtractOptions{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
		return fmt.Errorf("untar into %s: %w", dir, err)
	}
	return nil
}

var (
	_ runtime.Files   = (*sandbox)(nil)
	_ runtime.Pauser  = (*sandbox)(nil)
	_ runtime.Sweeper = (*sandbox)(nil)
	_ runtime.Resizer = (*process)(nil)
)

// Rename implements runtime.Files: both parents resolved in root, to's
// missing parents made first.
func (s *sandbox) Rename(ctx context.Context, from, to string) error {
	from, err := cleanPath(from)
	if err != nil {
		return err
	}
	if to, err = cleanPath(to); err != nil {
		return err
	}
	if err := s.mkdirAll(path.Dir(to)); err != nil {
		return err
	}
	sfd, sbase, err := s.parent(from)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, dbase, err := s.parent(to)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.Renameat(sfd, sbase, dfd, dbase); err != nil {
		return fileErr("rename", from, err)
	}
	return nil
}
