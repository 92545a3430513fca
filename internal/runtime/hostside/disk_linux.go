package hostside

import (
	"fmt"
	"os"
	"sync"

	"github.com/airlock-dev/airlock/internal/kernel/diskimg"
)

// Disk is a sandbox's disk as MountDisk makes it: Mount, the detached
// mount the sandbox is given, and Image, the unlinked image kept open
// until the sandbox is torn down (see diskimg.Mount), when Base gives
// its blocks back off the teardown's path (closeLater).
type Disk struct {
	Mount, Image *os.File
}

// Close closes both (a disk no sandbox was given).
func (d Disk) Close() error {
	err := d.Mount.Close()
	d.Image.Close()
	return err
}

// MountDisk makes sandbox id's disk (package diskimg): free space in the
// disk dir checked first, then a sparse copy of the blank base image of
// that size and inode count, attached to a self-clearing loop device and
// mounted detached. The caller owns the mount; closing its last reference
// unmounts it and frees the device.
func (l *Layout) MountDisk(id string, bytes, inodes int64) (Disk, error) {
	if err := diskimg.CheckFree(l.DiskDir, bytes); err != nil {
		return Disk{}, fmt.Errorf("disk: %w", err)
	}
	base, err := diskimg.Base(l.DiskDir, bytes, inodes)
	if err != nil {
		return Disk{}, fmt.Errorf("disk image: %w", err)
	}
	m, img, err := diskimg.Mount(base, l.DiskImage(id))
	return Disk{Mount: m, Image: img}, err
}

// KeepMount keeps the host's descriptor of the sandbox's disk mount,
// once handed to the sandbox, until the teardown closes it (closeLater):
// the mount, detached with the sandbox's mount namespace, then lives
// until that close, and the disk's unmount (a sync of its filesystem
// through the loop device, and the loop device's release) is not in the
// exit of the sandbox's last process, which a Destroy waits for. Nothing
// reads through it.
func (b *Base) KeepMount(mount *os.File) { b.mount = mount }

// PendingDisk is a disk being made in the background while a Create goes
// on (a disk takes as long as the rest of a Create). Exactly one of Take
// and Discard ends it.
type PendingDisk struct {
	c     chan diskResult
	taken bool
}

type diskResult struct {
	d   Disk
	err error
}

// StartDisk runs mount in a goroutine of its own.
func StartDisk(mount func() (Disk, error)) *PendingDisk {
	p := &PendingDisk{c: make(chan diskResult, 1)}
	go func() {
		d, err := mount()
		p.c <- diskResult{d, err}
	}()
	return p
}

// Take waits for the disk and returns its mount, which the caller owns;
// its image goes to b, whose teardown closes it.
func (p *PendingDisk) Take(b *Base) (*os.File, error) {
	p.taken = true
	r := <-p.c
	if r.err == nil {
		b.image = r.d.Image
	}
	return r.d.Mount, r.err
}

// Discard waits for a disk that was not taken and closes it (the undo of
// StartDisk: the goroutine writes into the disk dir, and its mount must
// not outlive a failed Create). It does nothing once the disk is taken.
func (p *PendingDisk) Discard() error {
	if p.taken {
		return nil
	}
	p.taken = true
	if r := <-p.c; r.err == nil {
		return r.d.Close()
	}
	return nil
}

// laterCloses are the descriptors whose last close is under way, one at
// a time in closeLaterLoop (started on first use); a full queue closes
// in the caller instead.
var (
	laterCloses     = make(chan *os.File, 1024)
	laterClosesOnce sync.Once
)

func closeLaterLoop() {
	for f := range laterCloses {
		f.Close()
	}
}

// closeLater closes, after a teardown, what the host kept of a sandbox
// so that its last close is not in the exit of the sandbox's last
// process, which a Destroy waits for: nothing of the sandbox uses it any
// more. Its disk image (unlinked; its filesystem unmounted with that
// process): the freeing of its blocks, a wait for the host disk's
// discards on a filesystem mounted with discard. The free space it gives
// back is seen late, which makes CheckFree stricter, never looser. Its
// agent's inotify instance: the kernel's release of its watches, an RCU
// grace period.
func closeLater(f *os.File) {
	if f == nil {
		return
	}
	laterClosesOnce.Do(func() { go closeLaterLoop() })
	select {
	case laterCloses <- f:
	default:
		f.Close()
	}
}
