package native

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/diskimg"
)

// A sandbox's writable layer (overlay upper, /workspace, home) lives on
// a disk of its own (package diskimg): a sparse ext4 image on the host's
// disk, loop-mounted, with hard size and inode limits.

// makeDisk gives the sandbox its disk (see package diskimg) as a detached
// mount, with upper, work and root directories on it that belong to the
// sandbox's root.
func (s *sandbox) makeDisk() (*os.File, error) {
	if err := diskimg.CheckFree(s.b.cfg.DiskDir, s.lim.DiskBytes); err != nil {
		return nil, fmt.Errorf("disk: %w", err)
	}
	base, err := diskimg.Base(s.b.cfg.DiskDir, s.lim.DiskBytes, s.lim.Inodes)
	if err != nil {
		return nil, fmt.Errorf("disk image: %w", err)
	}
	t0 := time.Now()
	m, err := diskimg.Mount(base, s.b.diskImage(s.id))
	trace(t0, "disk: mounted (from its start)")
	if err != nil {
		return nil, err
	}
	mfd := int(m.Fd())
	for _, d := range []string{"upper", "work", "root"} {
		if err := unix.Mkdirat(mfd, d, 0o755); err != nil {
			m.Close()
			return nil, fmt.Errorf("disk: mkdir %s: %w", d, err)
		}
		if err := unix.Fchownat(mfd, d, s.uidBase, s.uidBase, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			m.Close()
			return nil, fmt.Errorf("disk: chown %s: %w", d, err)
		}
	}
	_ = unix.Unlinkat(mfd, "lost+found", unix.AT_REMOVEDIR)
	trace(t0, "disk: directories made")
	return m, nil
}

// unmountUnder detaches every host mount below dir (a crash may have left
// a sandbox disk mounted).
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || len(f[4]) > len(dir) && f[4][:len(dir)+1] == dir+"/") {
			_ = unix.Unmount(f[4], unix.MNT_DETACH)
		}
	}
}
