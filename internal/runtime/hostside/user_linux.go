package hostside

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// maxEtcFile bounds the passwd and group files read from a template.
const maxEtcFile = 1 << 20

// WriteUserFiles writes etc/passwd and etc/group into upper, a sandbox's
// empty overlay upper layer, from those of its lower layers (top first)
// with the command user called u: they then hide the template's. The
// template's files are read without following any symlink (a template's
// etc/passwd linking to a host file must not bring that file in): one
// that is a symlink, not a regular file, or over 1 MiB is an error. The
// files are the caller's (root's) and mode 0644: the command user can
// read them, never change them.
func WriteUserFiles(upper string, lowers []string, uid, gid int, u runtime.User) error {
	if err := os.Mkdir(filepath.Join(upper, "etc"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	for _, name := range []string{"passwd", "group"} {
		orig, err := readLowerEtc(lowers, name)
		if err != nil {
			return err
		}
		data := runtime.GroupWith(orig, gid, u.Name)
		if name == "passwd" {
			data = runtime.PasswdWith(orig, uid, gid, u)
		}
		p := filepath.Join(upper, "etc", name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("sandbox user: write /etc/%s: %w", name, err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// readLowerEtc reads etc/name of the topmost lower layer that has it (an
// empty file when none has).
func readLowerEtc(lowers []string, name string) ([]byte, error) {
	for _, l := range lowers {
		dir, err := unix.Open(l, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("sandbox user: lower layer: %w", err)
		}
		fd, err := unix.Openat2(dir, "etc/"+name, &unix.OpenHow{
			Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		unix.Close(dir)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox user: the template's /etc/%s (it must be a regular file, not a symlink): %w", name, err)
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() || st.Size() > maxEtcFile {
			return nil, fmt.Errorf("sandbox user: the template's /etc/%s is not a regular file of at most 1 MiB: %w", name, errdefs.ErrInvalid)
		}
		b := make([]byte, st.Size())
		n, err := f.ReadAt(b, 0)
		if err != nil && n != len(b) {
			return nil, err
		}
		return b, nil
	}
	return nil, nil
}
