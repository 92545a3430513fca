package native

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/runtime/hostside"
)

// A sandbox's writable layer (overlay upper, /workspace, home) lives on
// a disk of its own (package diskimg): a sparse ext4 image on the host's
// disk, loop-mounted, with hard size and inode limits.

// makeDisk gives the sandbox its disk (see package diskimg) as a detached
// mount, with upper, work and root directories on it that belong to the
// sandbox's root.
func (s *sandbox) makeDisk() (hostside.Disk, error) {
	t0 := time.Now()
	d, err := s.b.lay.MountDisk(s.id, s.lim.DiskBytes, s.lim.Inodes)
	trace(t0, "disk: mounted (from its start)")
	if err != nil {
		return d, err
	}
	mfd := int(d.Mount.Fd())
	for _, dir := range []string{"upper", "work", "root"} {
		if err := unix.Mkdirat(mfd, dir, 0o755); err != nil {
			d.Close()
			return hostside.Disk{}, fmt.Errorf("disk: mkdir %s: %w", dir, err)
		}
		if err := unix.Fchownat(mfd, dir, s.uidBase, s.uidBase, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			d.Close()
			return hostside.Disk{}, fmt.Errorf("disk: chown %s: %w", dir, err)
		}
	}
	_ = unix.Unlinkat(mfd, "lost+found", unix.AT_REMOVEDIR)
	trace(t0, "disk: directories made")
	return d, nil
}
