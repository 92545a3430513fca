//go:build linux

package tarball

import (
	"archive/tar"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/pathwalk"
)

// ExtractOptions tune Extract.
type ExtractOptions struct {
	UID, GID int // owner of every entry
	// Skip, when set, leaves out entries whose cleaned name (and header)
	// it accepts.
	Skip func(name string, h *tar.Header) bool
}

// Extract unpacks r below dir (which must exist). Every path is resolved
// with RESOLVE_IN_ROOT against dir, so neither ".." nor a symlink already
// in dir (or made by an earlier entry) can lead a write elsewhere; entries
// with ".." or absolute names are refused; hard links, devices and fifos
// are skipped. It returns the number of entries written.
func Extract(r io.Reader, dir string, opt ExtractOptions) (int, error) {
	uid, gid := opt.UID, opt.GID
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(root)
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read tar: %w", err)
		}
		name, err := cleanEntry(h.Name)
		if err != nil {
			return n, err
		}
		if name == "." || opt.Skip != nil && opt.Skip(name, h) {
			continue
		}
		if err := writeEntry(root, name, h, tr, uid, gid); err != nil {
			return n, fmt.Errorf("%s: %w", h.Name, err)
		}
		n++
	}
}

// cleanEntry refuses absolute paths and any ".." element.
func cleanEntry(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("tar entry %q: absolute or empty path refused", name)
	}
	for _, el := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if el == ".." {
			return "", fmt.Errorf("tar entry %q: '..' refused", name)
		}
	}
	return path.Clean(name), nil
}

func openInRoot(root int, name string, flags uint64, mode uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	return pathwalk.Openat2(root, name, &how)
}

func writeEntry(root int, name string, h *tar.Header, r io.Reader, uid, gid int) error {
	dir, base := path.Split(name)
	if dir == "" {
		dir = "."
	}
	pfd, err := openInRoot(root, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if errors.Is(err, unix.ENOENT) {
		if err = mkdirAll(root, dir, uid, gid); err == nil {
			pfd, err = openInRoot(root, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		}
	}
	if err != nil {
		return fmt.Errorf("parent directory: %w", err)
	}
	defer unix.Close(pfd)
	mode := uint32(h.Mode & 0o777)
	switch h.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(pfd, base, mode|0o700); err != nil && err != unix.EEXIST {
			return err
		}
		return unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	case tar.TypeReg:
		return writeRegular(pfd, base, mode, r, uid, gid)
	case tar.TypeSymlink:
		_ = unix.Unlinkat(pfd, base, 0)
		if err := unix.Symlinkat(h.Linkname, pfd, base); err != nil {
			return err
		}
		return unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	default:
		// hard links, devices, fifos: not part of a workspace
		return nil
	}
}

// writeRegular writes an entry's content to a new temporary name beside
// base and renames it over base once the entry is whole: a stream cut in
// the middle of an entry leaves base as it was. Never through a symlink
// at base, nor into a FIFO or device put there (which could block the
// extraction). Where no file may be made beside base but base itself may
// be written (a write scope naming the file), it is written in place.
func writeRegular(pfd int, base string, mode uint32, r io.Reader, uid, gid int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &os.PathError{Op: "open", Path: base, Err: unix.ELOOP}
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := fmt.Sprintf(".airlock-upload-%x", rnd)
	f, err := pathwalk.OpenRegular(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode)
	if err != nil && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
		return writeInPlace(pfd, base, mode, r, uid, gid)
	}
	if err != nil {
		return err
	}
	err = fill(f, r, mode, uid, gid)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(pfd, tmp, pfd, base)
	}
	if err != nil {
		_ = unix.Unlinkat(pfd, tmp, 0)
	}
	return err
}

func writeInPlace(pfd int, base string, mode uint32, r io.Reader, uid, gid int) error {
	f, err := pathwalk.OpenRegular(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, mode)
	if err != nil {
		return err
	}
	defer f.Close()
	return fill(f, r, mode, uid, gid)
}

func fill(f *os.File, r io.Reader, mode uint32, uid, gid int) error {
	if _, err := io.Copy(f, r); err != nil {
		return err
	}
	if err := f.Chown(uid, gid); err != nil {
		return err
	}
	return f.Chmod(os.FileMode(mode))
}

func mkdirAll(root int, dir string, uid, gid int) error {
	cur := ""
	for _, el := range strings.Split(strings.Trim(dir, "/"), "/") {
		if el == "" || el == "." {
			continue
		}
		parent := cur
		if parent == "" {
			parent = "."
		}
		pfd, err := openInRoot(root, parent, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(pfd, el, 0o755)
		if err == nil {
			_ = unix.Fchownat(pfd, el, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		}
		unix.Close(pfd)
		if err != nil && err != unix.EEXIST {
			return err
		}
		cur = path.Join(cur, el)
	}
	return nil
}
