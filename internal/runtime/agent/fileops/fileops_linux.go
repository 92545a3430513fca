// Package fileops is the agent's file API and workspace unpacking, as
// the command user: stat, list, read, write (whole or nothing), mkdir,
// remove, rename, tar out and untar in, every path resolved in the sandbox's
// root. It holds no state: the agent passes the ids and write layers in
// force with each call (AsUser), and answers the host with what Do
// returns.
package fileops

import (
	"archive/tar"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/landlock"
	"github.com/airlock-dev/airlock/internal/kernel/pathwalk"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// File operations run inside the sandbox, on a thread whose filesystem
// uid and gid are the command user's, so they can do exactly what a
// command could (no capability of the agent's is used), and every path is
// resolved with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: ".." and
// symlinks stay inside the sandbox, /proc magic links are refused.

// AsUser runs fn on a locked thread with the filesystem ids uid and gid
// (the command user's, which also drops the agent's filesystem
// capabilities on it) and, when layers is not empty (a write scope), under
// those Landlock layers, oldest first. fn must do its file system calls on
// that thread (no goroutines). A thread that could not be given back as
// root dies with its goroutine.
func AsUser(uid, gid int, layers []*landlock.Ruleset, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		_, _ = unix.SetfsgidRetGid(gid)
		_, _ = unix.SetfsuidRetUid(uid)
		if cur, _ := unix.SetfsuidRetUid(-1); cur != uid {
			// A kernel without setfsuid (gVisor before 2023): the
			// thread's effective ids instead, which also clears its
			// effective capabilities; the saved ids stay root.
			if err := setThreadEffectiveIDs(uid, gid); err != nil {
				errc <- fmt.Errorf("could not take the command user's ids: %w", err)
				return // the thread dies locked
			}
			err := fn()
			if setThreadEffectiveIDs(0, 0) == nil {
				runtime.UnlockOSThread()
			}
			errc <- err
			return
		}
		if len(layers) > 0 {
			// Landlock cannot be lifted: the thread must never serve
			// another goroutine, so it dies with this one (still locked).
			if err := confineThread(layers); err != nil {
				errc <- fmt.Errorf("apply the write scope: %w", err)
				return
			}
			errc <- fn()
			return
		}
		err := fn()
		_, _ = unix.SetfsuidRetUid(0)
		_, _ = unix.SetfsgidRetGid(0)
		// Back to root only if both really are: otherwise the thread dies
		// with the goroutine (it stays locked).
		if u, _ := unix.SetfsuidRetUid(-1); u == 0 {
			if g, _ := unix.SetfsgidRetGid(-1); g == 0 {
				runtime.UnlockOSThread()
			}
		}
		errc <- err
	}()
	return <-errc
}

// confineThread applies the write layers to the calling, locked thread.
// Landlock wants no_new_privs first; it is per thread, so the rest of the
// agent keeps its privileges.
func confineThread(layers []*landlock.Ruleset) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	for _, rs := range layers {
		if _, err := rs.RestrictThread(); err != nil {
			return err
		}
	}
	return nil
}

// setThreadEffectiveIDs sets the calling thread's effective gid and uid
// (raw syscalls: Go's wrappers change every thread of the process) and
// checks that both took.
func setThreadEffectiveIDs(uid, gid int) error {
	keep := ^uintptr(0) // -1: unchanged
	if uid == 0 {
		// back to root: the uid first, which makes changing the gid possible
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
			return e
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(gid), keep); e != 0 {
			return e
		}
	} else {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(gid), keep); e != 0 {
			return e
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
			return e
		}
	}
	var r, e, sv uint32
	if _, _, errno := unix.RawSyscall(unix.SYS_GETRESUID, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&sv))); errno != 0 || int(e) != uid {
		return fmt.Errorf("effective uid %d, want %d", e, uid)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_GETRESGID, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&sv))); errno != 0 || int(e) != gid {
		return fmt.Errorf("effective gid %d, want %d", e, gid)
	}
	return nil
}

// ErrCode is the agent's error code (proto.Message.Code) for a file
// operation's error.
func ErrCode(err error) string {
	switch {
	case errors.Is(err, unix.ENOENT):
		return "not_found"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return "denied"
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return "conflict"
	case errors.Is(err, unix.EFBIG), errors.Is(err, unix.ENOSPC):
		return "limit_exceeded"
	case errors.Is(err, proto.ErrUploadAborted):
		return "aborted"
	case errors.Is(err, ErrInvalidPath), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		return "invalid"
	}
	return "internal"
}

// ErrInvalidPath is a request whose path (or descriptors) cannot be
// served: its code is "invalid".
var ErrInvalidPath = errors.New("invalid path")

// cleanPath wants an absolute path without NUL.
func cleanPath(p string) (string, error) {
	if p == "" || !path.IsAbs(p) || strings.ContainsRune(p, 0) || len(p) > 4096 {
		return "", fmt.Errorf("%q: want an absolute path: %w", p, ErrInvalidPath)
	}
	return path.Clean(p), nil
}

const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

func openRoot(p string, flags uint64, mode uint64) (int, error) {
	// O_NOCTTY: the agent leads a session with no terminal, and a tty
	// (a sandbox's pty, say) it opened would become its own, whose
	// owner could then signal it.
	if flags&unix.O_PATH == 0 { // (openat2 refuses O_NOCTTY with O_PATH)
		flags |= unix.O_NOCTTY
	}
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags}
	fd, err := pathwalk.Openat2(unix.AT_FDCWD, p, &how)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	// /proc is not the sandbox's files, and its entries of the agent's own
	// process are open to this thread on some kernels (gVisor) whatever
	// its ids: the file API does not reach into it.
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type == unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "open", Path: p, Err: unix.EACCES}
	}
	return fd, nil
}

// parentAndBase opens p's parent directory (resolved in root) and
// returns it with p's last element, which is then used with *at calls
// that do not follow it.
func parentAndBase(p string) (int, string, error) {
	if p == "/" {
		return -1, "", fmt.Errorf("the root itself: %w", ErrInvalidPath)
	}
	dir, base := path.Split(p)
	fd, err := openRoot(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, base, err
}

func statInfo(name, p string, st *unix.Stat_t, target string) proto.FileInfo {
	fi := proto.FileInfo{Name: name, Path: p, Size: st.Size, Mode: st.Mode & 0o7777, UID: int(st.Uid), GID: int(st.Gid),
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC(), Target: target}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		fi.Type = "file"
	case unix.S_IFDIR:
		fi.Type = "dir"
	case unix.S_IFLNK:
		fi.Type = "symlink"
	default:
		fi.Type = "other"
	}
	return fi
}

// lstatAt describes base in dirfd without following it.
func lstatAt(dirfd int, base, full string) (proto.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return proto.FileInfo{}, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	target := ""
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dirfd, base, buf); err == nil {
			target = string(buf[:n])
		}
	}
	return statInfo(base, full, &st, target), nil
}

// Do carries out op with its descriptors (read, write and tar take one)
// and returns the answer's content (Files or Size; the caller sets Op and
// ID). Call it inside AsUser.
func Do(op *proto.FileOp, files []*os.File) (*proto.Message, error) {
	p, err := cleanPath(op.Path)
	if err != nil {
		return nil, err
	}
	switch op.Kind {
	case "stat":
		if p == "/" {
			var st unix.Stat_t
			if err := unix.Stat("/", &st); err != nil {
				return nil, err
			}
			return &proto.Message{Files: []proto.FileInfo{statInfo("/", "/", &st, "")}}, nil
		}
		dfd, base, err := parentAndBase(p)
		if err != nil {
			return nil, err
		}
		defer unix.Close(dfd)
		fi, err := lstatAt(dfd, base, p)
		if err != nil {
			return nil, err
		}
		return &proto.Message{Files: []proto.FileInfo{fi}}, nil
	case "statfs":
		// the filesystem's figures only: no name, nothing of its files
		fd, err := openRoot(p, unix.O_PATH, 0)
		if err != nil {
			return nil, err
		}
		defer unix.Close(fd)
		var st unix.Statfs_t
		if err := unix.Fstatfs(fd, &st); err != nil {
			return nil, &fs.PathError{Op: "statfs", Path: p, Err: err}
		}
		ds := proto.StatfsOf(&st)
		return &proto.Message{Disk: &ds}, nil
	case "list":
		fd, err := openRoot(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return nil, err
		}
		d := os.NewFile(uintptr(fd), p)
		defer d.Close()
		names, err := d.Readdirnames(-1)
		if err != nil {
			return nil, err
		}
		out := make([]proto.FileInfo, 0, len(names))
		for _, n := range names {
			fi, err := lstatAt(fd, n, path.Join(p, n))
			if err == nil {
				out = append(out, fi)
			}
		}
		return &proto.Message{Files: out}, nil
	case "read":
		if len(files) != 1 {
			return nil, fmt.Errorf("read needs one descriptor: %w", ErrInvalidPath)
		}
		// Reads follow symlinks (resolution stays inside the sandbox);
		// writes never do.
		fd, err := openRoot(p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fd), p)
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file: %w", p, unix.EISDIR)
		}
		if op.MaxBytes > 0 && st.Size() > op.MaxBytes {
			return nil, fmt.Errorf("%s is %d bytes, more than %d: %w", p, st.Size(), op.MaxBytes, unix.EFBIG)
		}
		n, err := io.Copy(files[0], f)
		if err != nil {
			return nil, err
		}
		return &proto.Message{Size: n}, nil
	case "write":
		if len(files) != 1 {
			return nil, fmt.Errorf("write needs one descriptor: %w", ErrInvalidPath)
		}
		mode := op.Mode & 0o777
		if mode == 0 {
			mode = 0o644
		}
		if op.Parents {
			if err := mkdirParents(path.Dir(p)); err != nil {
				return nil, err
			}
		}
		dfd, base, err := parentAndBase(p)
		if err != nil {
			return nil, err
		}
		defer unix.Close(dfd)
		n, err := writeWhole(dfd, base, p, mode, &proto.FrameReader{R: files[0]})
		if err != nil {
			return nil, err
		}
		return &proto.Message{Size: n}, nil
	case "mkdir":
		if op.Parents {
			return &proto.Message{}, mkdirParents(p)
		}
		dfd, base, err := parentAndBase(p)
		if err != nil {
			return nil, err
		}
		defer unix.Close(dfd)
		if err := unix.Mkdirat(dfd, base, 0o755); err != nil {
			return nil, &fs.PathError{Op: "mkdir", Path: p, Err: err}
		}
		return &proto.Message{}, nil
	case "remove":
		dfd, base, err := parentAndBase(p)
		if err != nil {
			return nil, err
		}
		defer unix.Close(dfd)
		return &proto.Message{}, removeAt(dfd, base, p, op.Recursive)
	case "rename":
		return &proto.Message{}, renameTo(p, op.To)
	case "tar":
		if len(files) != 1 {
			return nil, fmt.Errorf("tar needs one descriptor: %w", ErrInvalidPath)
		}
		n, err := writeTarIn(files[0], p)
		if err != nil {
			return nil, err
		}
		return &proto.Message{Size: n}, nil
	}
	return nil, fmt.Errorf("unknown file op %q: %w", op.Kind, ErrInvalidPath)
}

// writeWhole puts all of r at base in dirfd, or nothing: r is written
// to a new temporary name beside base and renamed over it once r ended
// well, so an upload that breaks off (ErrUploadAborted) leaves base as it
// was. base must be absent or a regular file, never a symlink planted at
// the name, a FIFO or a device; an existing file keeps its permissions.
// Where base may be written but no file made beside it (a write scope
// that names the file, a directory the user cannot write), r is staged in
// an unnamed file in /tmp first and then copied into base.
func writeWhole(dirfd int, base, full string, mode uint32, r io.Reader) (int64, error) {
	var st unix.Stat_t
	exists := false
	switch err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return 0, &fs.PathError{Op: "create", Path: full, Err: unix.ELOOP}
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return 0, &fs.PathError{Op: "create", Path: full, Err: unix.EISDIR}
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return 0, &fs.PathError{Op: "create", Path: full, Err: fmt.Errorf("not a regular file: %w", unix.EINVAL)}
	case err == nil:
		exists, mode = true, st.Mode&0o777
	case err != unix.ENOENT:
		return 0, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	var rnd [8]byte
	_, _ = crand.Read(rnd[:])
	tmp := fmt.Sprintf(".airlock-upload-%x", rnd)
	f, err := pathwalk.OpenRegular(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode)
	if err != nil && exists && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
		return writeStaged(dirfd, base, full, r)
	}
	if err != nil {
		return 0, &fs.PathError{Op: "create", Path: full, Err: errors.Unwrap(err)}
	}
	if exists {
		_ = f.Chmod(fs.FileMode(mode)) // the umask took bits off; the file had them
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
			err = &fs.PathError{Op: "rename", Path: full, Err: err}
		}
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return n, err
	}
	return n, nil
}

// writeStaged is writeWhole through an unnamed file in /tmp: base is
// opened for writing first (so a refused write reads nothing), and
// truncated and written only once all of r is there.
func writeStaged(dirfd int, base, full string, r io.Reader) (int64, error) {
	f, err := pathwalk.OpenRegular(dirfd, base, unix.O_WRONLY, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "create", Path: full, Err: errors.Unwrap(err)}
	}
	defer f.Close()
	sfd, err := openRoot("/tmp", unix.O_TMPFILE|unix.O_RDWR, 0o600)
	if err != nil {
		return 0, fmt.Errorf("stage the upload of %s in /tmp: %w", full, err)
	}
	staged := os.NewFile(uintptr(sfd), "staged")
	defer staged.Close()
	n, err := io.Copy(staged, r)
	if err != nil {
		return n, err
	}
	if _, err := staged.Seek(0, io.SeekStart); err != nil {
		return n, err
	}
	if err := f.Truncate(0); err != nil {
		return n, &fs.PathError{Op: "truncate", Path: full, Err: err}
	}
	if _, err := io.Copy(f, staged); err != nil {
		return n, err
	}
	return n, f.Close()
}

func mkdirParents(p string) error {
	cur := "/"
	for _, el := range strings.Split(strings.Trim(p, "/"), "/") {
		if el == "" {
			continue
		}
		dfd, err := openRoot(cur, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(dfd, el, 0o755)
		unix.Close(dfd)
		if err != nil && err != unix.EEXIST {
			return &fs.PathError{Op: "mkdir", Path: path.Join(cur, el), Err: err}
		}
		cur = path.Join(cur, el)
	}
	// the last element must be a directory (not a symlink to one elsewhere:
	// openRoot would resolve it in root anyway)
	fd, err := openRoot(p, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// renameTo moves from to to (rename(2): a file at to is replaced),
// making to's missing parents first, as E2B's Move does. Neither path's
// last element is followed: a symlink is moved, not what it names.
func renameTo(from, to string) error {
	to, err := cleanPath(to)
	if err != nil {
		return err
	}
	if err := mkdirParents(path.Dir(to)); err != nil {
		return err
	}
	sfd, sbase, err := parentAndBase(from)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, dbase, err := parentAndBase(to)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	// rename(2) cannot cross filesystems (EXDEV), which a write scope's
	// Landlock refusal also answers: say which it is.
	var sst, dst unix.Stat_t
	if unix.Fstat(sfd, &sst) == nil && unix.Fstat(dfd, &dst) == nil && sst.Dev != dst.Dev {
		return fmt.Errorf("rename %s to %s: they are on different filesystems of the sandbox (its disk, /tmp and the root are each their own): copy it instead: %w", from, to, ErrInvalidPath)
	}
	if err := unix.Renameat(sfd, sbase, dfd, dbase); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// removeAt removes base in dirfd; with recursive, a directory and all it
// holds, never following a symlink.
func removeAt(dirfd int, base, full string, recursive bool) error {
	err := unix.Unlinkat(dirfd, base, 0)
	if err == nil {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return &fs.PathError{Op: "remove", Path: full, Err: err}
	}
	err = unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR)
	if err == nil || !recursive || (err != unix.ENOTEMPTY && err != unix.EEXIST) {
		if err != nil {
			return &fs.PathError{Op: "remove", Path: full, Err: err}
		}
		return nil
	}
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: full, Err: err}
	}
	d := os.NewFile(uintptr(fd), full)
	names, err := d.Readdirnames(-1)
	if err != nil {
		d.Close()
		return err
	}
	for _, n := range names {
		if err := removeAt(fd, n, path.Join(full, n), true); err != nil {
			d.Close()
			return err
		}
	}
	d.Close()
	if err := unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR); err != nil {
		return &fs.PathError{Op: "remove", Path: full, Err: err}
	}
	return nil
}

// writeTarIn writes the tree at p as a tar stream (symlinks as links,
// never followed), names relative to p.
func writeTarIn(w io.Writer, p string) (int64, error) {
	root, err := openRoot(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(root)
	cw := &countWriter{w: w}
	tw := tar.NewWriter(cw)
	if err := tarDir(tw, root, ""); err != nil {
		return cw.n, err
	}
	if err := tw.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
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

func tarDir(tw *tar.Writer, dirfd int, rel string) error {
	dup, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dup), rel)
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		name := path.Join(rel, n)
		fi, err := lstatAt(dirfd, n, name)
		if err != nil {
			continue
		}
		h := &tar.Header{Name: name, Mode: int64(fi.Mode), ModTime: fi.ModTime}
		switch fi.Type {
		case "dir":
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			fd, err := unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // unreadable: skipped, as a command would see it
			}
			err = tarDir(tw, fd, name)
			unix.Close(fd)
			if err != nil {
				return err
			}
		case "symlink":
			h.Typeflag, h.Linkname = tar.TypeSymlink, fi.Target
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		case "file":
			// a FIFO swapped in since the listing is skipped, not waited on
			f, err := pathwalk.OpenRegular(dirfd, n, unix.O_RDONLY, 0)
			if err != nil {
				continue
			}
			h.Typeflag, h.Size = tar.TypeReg, fi.Size
			if err := tw.WriteHeader(h); err != nil {
				f.Close()
				return err
			}
			_, err = io.CopyN(tw, f, fi.Size)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Untar unpacks the tar stream r below dir (absolute) as files of uid and
// gid, and returns how many entries it wrote. Every path is resolved with
// RESOLVE_IN_ROOT against the destination, so neither ".." nor a symlink
// planted inside the sandbox can lead the write elsewhere. Call it inside
// AsUser. On error the rest of r is read and dropped, so that the writer
// is not stuck.
func Untar(r io.Reader, dir string, uid, gid int) (int, error) {
	n, err := tarball.Extract(r, dir, tarball.ExtractOptions{UID: uid, GID: gid})
	if err != nil {
		_, _ = io.Copy(io.Discard, r)
	}
	return n, err
}

// UntarErrCode: a refused write (permissions, a write scope) is "denied";
// anything else is the stream's or the destination's fault.
func UntarErrCode(err error) string {
	if code := ErrCode(err); code == "denied" {
		return code
	}
	return "invalid"
}
