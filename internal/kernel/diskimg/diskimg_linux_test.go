package diskimg

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/testroot"
)

// A directory in memory is refused for disk images (unless the machine
// has no disk and says so), and a disk larger than the free space is.
func TestCheckDirAndFree(t *testing.T) {
	testroot.Need(t, "to mount a tmpfs")
	t.Setenv(InMemoryEnv, "")
	disk := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		if err := CheckDir(disk); err != nil {
			t.Errorf("a directory on a disk: %v", err)
		}
	}
	mem := t.TempDir()
	if err := unix.Mount("airlock-test", mem, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mem, unix.MNT_DETACH) })
	if err := CheckDir(mem); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("a tmpfs: %v, want unsupported", err)
	}
	if err := CheckFree(mem, 512<<10); err != nil {
		t.Errorf("512 KiB on a 1 MiB tmpfs: %v", err)
	}
	if err := CheckFree(mem, 2<<20); !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Errorf("2 MiB on a 1 MiB tmpfs: %v, want limit exceeded", err)
	}
	t.Setenv(InMemoryEnv, "1")
	if err := CheckDir(mem); err != nil {
		t.Errorf("a tmpfs with %s=1: %v", InMemoryEnv, err)
	}
	if err := CheckFree(mem, 2<<20); err != nil {
		t.Errorf("2 MiB on a 1 MiB tmpfs with %s=1: %v", InMemoryEnv, err)
	}
}
