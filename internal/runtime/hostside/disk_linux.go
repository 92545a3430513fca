package hostside

import (
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/internal/kernel/diskimg"
)

// MountDisk makes sandbox id's disk (package diskimg): free space in the
// disk dir checked first, then a sparse copy of the blank base image of
// that size and inode count, attached to a self-clearing loop device and
// mounted detached. The caller owns the mount; closing its last reference
// unmounts it and frees the device.
func (l *Layout) MountDisk(id string, bytes, inodes int64) (*os.File, error) {
	if err := diskimg.CheckFree(l.DiskDir, bytes); err != nil {
		return nil, fmt.Errorf("disk: %w", err)
	}
	base, err := diskimg.Base(l.DiskDir, bytes, inodes)
	if err != nil {
		return nil, fmt.Errorf("disk image: %w", err)
	}
	return diskimg.Mount(base, l.DiskImage(id))
}

// PendingDisk is a disk being made in the background while a Create goes
// on (a disk takes as long as the rest of a Create). Exactly one of Take
// and Discard ends it.
type PendingDisk struct {
	c     chan diskResult
	taken bool
}

type diskResult struct {
	f   *os.File
	err error
}

// StartDisk runs mount in a goroutine of its own.
func StartDisk(mount func() (*os.File, error)) *PendingDisk {
	p := &PendingDisk{c: make(chan diskResult, 1)}
	go func() {
		f, err := mount()
		p.c <- diskResult{f, err}
	}()
	return p
}

// Take waits for the disk; the caller owns it.
func (p *PendingDisk) Take() (*os.File, error) {
	p.taken = true
	r := <-p.c
	return r.f, r.err
}

// Discard waits for a disk that was not taken and closes it (the undo of
// StartDisk: the goroutine writes into the disk dir, and its mount must
// not outlive a failed Create). It does nothing once the disk is taken.
func (p *PendingDisk) Discard() error {
	if p.taken {
		return nil
	}
	p.taken = true
	if r := <-p.c; r.f != nil {
		return r.f.Close()
	}
	return nil
}
