package native

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's writable layer (overlay upper, /workspace, home) lives on
// a disk of its own (package diskimg): a sparse ext4 image on the host's
// disk, loop-mounted, with hard size and inode limits.

// makeDisk gives the sandbox its disk (see package diskimg) as a detached
// mount, with upper, work and root directories on it that belong to the
// sandbox's root.
func (s *sandbox) makeDisk() (*os.File, error) {
	t0 := time.Now()
	m, err := s.b.lay.MountDisk(s.id, s.lim.DiskBytes, s.lim.Inodes)
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
