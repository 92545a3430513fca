package hostside

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// A uid slot is a range of host uids of one sandbox's own: its root is
// UIDRangeStart + slot*UIDRangeSize.
const (
	// UIDRangeStart is the first host uid given to sandboxes.
	UIDRangeStart = 0x10000000
	// UIDRangeSize is the uids of one slot.
	UIDRangeSize = 65536
	// MaxSlots is the number of slots, hence of sandboxes with one.
	MaxSlots = 16384
)

// SlotUIDBase is the first host uid of slot n (its sandbox's root).
func SlotUIDBase(n int) int { return UIDRangeStart + n*UIDRangeSize }

// Slot is a uid slot, held by an flock (SlotDir/N.lock) for the
// sandbox's life. The lock files stay: a slot is free when its file is
// not locked.
type Slot struct {
	N    int
	lock *os.File
}

// UIDBase is the slot's first host uid.
func (s *Slot) UIDBase() int { return SlotUIDBase(s.N) }

// Release frees the slot.
func (s *Slot) Release() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// TakeSlot takes a free uid slot in dir, from a random start, without
// waiting for any: ErrLimitExceeded when all are taken.
func TakeSlot(dir string) (*Slot, error) {
	var r [2]byte
	_, _ = rand.Read(r[:])
	start := (int(r[0])<<8 | int(r[1])) % MaxSlots
	for i := 0; i < MaxSlots; i++ {
		n := (start + i) % MaxSlots
		f, err := lockSlot(filepath.Join(dir, strconv.Itoa(n)+".lock"))
		if err == nil {
			return &Slot{N: n, lock: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("uid slot: %w", err)
		}
	}
	return nil, fmt.Errorf("no free uid slot (%d sandboxes): %w", MaxSlots, errdefs.ErrLimitExceeded)
}

// lockSlot opens (creating it) and flocks a slot's lock file without
// waiting.
func lockSlot(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// SlotProcesses counts host processes whose real uid lies in a slot's
// range (any airlock's sandboxes); -1 if /proc cannot be read.
func SlotProcesses() int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "Uid:") {
				continue
			}
			f := strings.Fields(line)
			if len(f) > 1 {
				if uid, err := strconv.Atoi(f[1]); err == nil && uid >= UIDRangeStart && uid < UIDRangeStart+MaxSlots*UIDRangeSize {
					n++
				}
			}
			break
		}
	}
	return n
}
