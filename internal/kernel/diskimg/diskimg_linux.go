// Package diskimg gives a sandbox a disk of its own: a sparse copy of a
// blank ext4 image, attached to a loop device that frees itself and
// mounted as a detached mount (fsmount). A hard size and inode limit come
// from the filesystem itself, and its pages are ordinary page cache:
// writing files never eats into the sandbox's memory limit the way a
// tmpfs would. Making a filesystem per sandbox would be slow, so one blank
// image per (size, inodes) is made once with mkfs.ext4 and each sandbox
// gets a sparse copy of it (a few hundred KiB of metadata). The runtime
// backends use it.
package diskimg

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Base returns the blank image for size bytes and inodes in dir, making
// it once (with mkfs.ext4).
func Base(dir string, size, inodes int64) (string, error) {
	p := filepath.Join(dir, fmt.Sprintf("ext4-%d-%d.img", size, inodes))
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return "", fmt.Errorf("mkfs.ext4 not found (apt-get install e2fsprogs): %w", errdefs.ErrUnsupported)
	}
	f, err := os.CreateTemp(dir, ".tmp-img-")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return "", err
	}
	// No journal: the disk is disposable. root_owner: the sandbox's root
	// gets it after mount.
	out, err := exec.Command(mkfs, "-q", "-F", "-b", "4096", "-m", "0", "-N", strconv.FormatInt(inodes, 10),
		"-O", "^has_journal,^resize_inode", "-E", "lazy_itable_init=1,nodiscard", tmp).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", err
	}
	return p, nil
}

// Mount makes img a sparse copy of base and returns its filesystem as a
// detached mount: the descriptor is the root of a mount that exists in no
// mount namespace until the caller attaches it (move_mount), so the host's
// mount table never shows it and there is nothing of it to leak; closing
// the last reference unmounts it and frees the loop device. img is removed
// before Mount returns (the loop device holds it).
//
// image is a read-only descriptor of the unlinked image, which the caller
// closes once the filesystem is unmounted everywhere: the last close of
// the image gives its blocks back to the host's filesystem, and on one
// mounted with discard that waits for the host's disk (1-47 ms measured
// per image on a busy virtio disk). Held by the caller, that wait is not
// the last process of the sandbox's, whose exit unmounts the disk.
func Mount(base, img string) (mnt, image *os.File, err error) {
	if err := sparseCopy(base, img); err != nil {
		_ = os.Remove(img)
		return nil, nil, fmt.Errorf("disk image: %w", err)
	}
	image, err = os.Open(img)
	if err != nil {
		_ = os.Remove(img)
		return nil, nil, fmt.Errorf("disk image: %w", err)
	}
	dev, lf, err := attachLoop(img)
	// The loop device holds the image now: unlinked, it is freed with the
	// device (and image) and can never be left behind.
	_ = os.Remove(img)
	if err != nil {
		image.Close()
		return nil, nil, fmt.Errorf("disk: %w", err)
	}
	defer lf.Close() // once mounted, the superblock holds the device
	mnt, err = mountDevice(dev)
	if err != nil {
		image.Close()
		return nil, nil, err
	}
	return mnt, image, nil
}

// mountDevice mounts the ext4 filesystem on dev, detached.
func mountDevice(dev string) (*os.File, error) {
	fsfd, err := unix.Fsopen("ext4", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("disk: fsopen: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "source", dev); err != nil {
		return nil, fmt.Errorf("disk: fsconfig source: %w", err)
	}
	// No cache flushes: the disk dies with its sandbox (and with the host),
	// so nothing on it needs to reach the host's disk; a flush would make
	// every unmount wait for the host's disk.
	if err := unix.FsconfigSetFlag(fsfd, "nobarrier"); err != nil {
		return nil, fmt.Errorf("disk: fsconfig nobarrier: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("disk: mount %s: %w", dev, err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOATIME)
	if err != nil {
		return nil, fmt.Errorf("disk: fsmount: %w", err)
	}
	return os.NewFile(uintptr(mfd), "sandbox-disk"), nil
}

// sparseCopy copies src to dst keeping holes; dst gets src's size.
func sparseCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := out.Truncate(st.Size()); err != nil {
		return err
	}
	ifd, ofd := int(in.Fd()), int(out.Fd())
	var off int64
	for off < st.Size() {
		data, err := unix.Seek(ifd, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			break
		}
		if err != nil {
			return fmt.Errorf("seek data: %w", err)
		}
		hole, err := unix.Seek(ifd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("seek hole: %w", err)
		}
		roff, woff := data, data
		for roff < hole {
			n, err := unix.CopyFileRange(ifd, &roff, ofd, &woff, int(hole-roff), 0)
			if err != nil {
				return fmt.Errorf("copy_file_range: %w", err)
			}
			if n == 0 {
				break
			}
		}
		off = hole
	}
	return nil
}

// attachMu serializes this process's loop attaches; loopAttempts bounds
// the retries of one against other processes.
var attachMu sync.Mutex

const loopAttempts = 100

// attachLoop attaches img to a free loop device that detaches itself once
// its filesystem is unmounted everywhere and the returned descriptor is
// closed: keep it open until the filesystem is mounted.
func attachLoop(img string) (string, *os.File, error) {
	// LOOP_CTL_GET_FREE hands every caller the same free device until one
	// configures it: a hundred concurrent creates in one daemon ran out of
	// retries on that race ("no free loop device" with 90 free). Within
	// the process, one attach at a time; other processes still race, and
	// the retries (with a growing, jittered wait) are for them.
	attachMu.Lock()
	defer attachMu.Unlock()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open /dev/loop-control (modprobe loop): %w", err)
	}
	defer ctl.Close()
	for attempt := 0; attempt < loopAttempts; attempt++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", nil, fmt.Errorf("get free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		lf, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", nil, err
		}
		cfg := unix.LoopConfig{Fd: uint32(f.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
		if err == nil {
			return dev, lf, nil
		}
		lf.Close()
		if err != unix.EBUSY {
			return "", nil, fmt.Errorf("configure %s: %w", dev, err)
		}
		// another process took it
		time.Sleep(time.Duration(1+attempt/10)*time.Millisecond + time.Duration(rand.IntN(1000))*time.Microsecond)
	}
	return "", nil, errors.New("no free loop device")
}

// InMemoryEnv, set to 1, lets CheckDir accept a directory in memory (a
// test machine with no disk, say): the disks' contents then take memory
// that no sandbox's memory limit counts, and CheckFree does not check
// (such a machine's tmpfs is smaller than a default disk).
const InMemoryEnv = "AIRLOCK_DISKS_IN_MEMORY"

// CheckDir refuses a directory for disk images that is in memory (tmpfs,
// ramfs): a sandbox's writes to its disk would take host memory outside
// its memory limit, up to its disk size. /run is a tmpfs on most hosts.
func CheckDir(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("disk images directory %s: %w", dir, err)
	}
	if (st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC) && os.Getenv(InMemoryEnv) != "1" {
		return fmt.Errorf("disk images directory %s is in memory (tmpfs): what sandboxes write to their disks would take memory that no memory limit counts; use a directory on a disk (the data dir's disks/ is the default): %w", dir, errdefs.ErrUnsupported)
	}
	return nil
}

// CheckFree refuses a disk of size bytes when dir's file system has less
// free space than that: the image is sparse, and a disk that cannot be
// filled would fail its sandbox mid-write instead of at creation. (Disks
// of sandboxes that are running share that space and are not counted.)
func CheckFree(dir string, size int64) error {
	if os.Getenv(InMemoryEnv) == "1" {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("disk images directory %s: %w", dir, err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < size {
		return fmt.Errorf("%s has %d MiB free, less than the sandbox's disk of %d MiB: %w", dir, free>>20, size>>20, errdefs.ErrLimitExceeded)
	}
	return nil
}

// Image is where the disk image of sandbox id is made in dir (Mount
// unlinks it once its loop device holds it).
func Image(dir, id string) string { return filepath.Join(dir, "sb-"+id+".img") }

// ReapImages removes the images in dir of sandboxes that no longer exist
// (live reports whether sandbox id does): an image left by a crash
// between its copy and its attach. A young one is left alone: another
// airlock with the same dir may be making it right now (an image lives
// for milliseconds before its attach unlinks it).
func ReapImages(dir string, live func(id string) bool) {
	imgs, err := filepath.Glob(Image(dir, "*"))
	if err != nil {
		return
	}
	for _, img := range imgs {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(img), "sb-"), ".img")
		if live(id) {
			continue
		}
		if st, err := os.Stat(img); err == nil && time.Since(st.ModTime()) > 2*time.Minute {
			_ = os.Remove(img)
		}
	}
}
