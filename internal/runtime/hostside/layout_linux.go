package hostside

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/kernel/diskimg"
)

// Layout is where one backend keeps its sandboxes on the host.
type Layout struct {
	// StateDir holds sandboxes/, one state dir per sandbox.
	StateDir string
	// DiskDir holds the disk images (see package diskimg); on a disk,
	// and no other backend's.
	DiskDir string
	// SlotDir holds the uid slot locks, shared by every airlock on the
	// host; empty for a backend that takes no uid slots.
	SlotDir string
	// CgroupParent is the cgroup every sandbox's group is made under:
	// Reap treats each group under it as this layout's.
	CgroupParent string
	Hier         *cgroups.Hierarchy
	// DirMode is the mode of the state dirs (and the slot dir): 0711
	// where the sandbox's own root, an unprivileged host uid, must
	// traverse them (native), else 0700.
	DirMode os.FileMode
}

// SandboxesDir is the directory of the sandboxes' state dirs.
func (l *Layout) SandboxesDir() string { return filepath.Join(l.StateDir, "sandboxes") }

// DiskImage is where sandbox id's disk image is made (and unlinked once
// attached).
func (l *Layout) DiskImage(id string) string { return diskimg.Image(l.DiskDir, id) }

// Prepare makes the layout's directories, with DirMode even where they
// existed, and checks them: the disk dir must not be in memory, and state
// dirs that others must traverse must be reachable by them.
func (l *Layout) Prepare() error {
	dirs := []string{l.StateDir, l.SandboxesDir()}
	if l.SlotDir != "" {
		dirs = append(dirs, l.SlotDir)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, l.DirMode); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
		if err := os.Chmod(d, l.DirMode); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
	}
	if l.DirMode&0o001 != 0 {
		if err := CheckTraversable(l.StateDir); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
	}
	if err := os.MkdirAll(l.DiskDir, 0o700); err != nil {
		return fmt.Errorf("disks dir: %w", err)
	}
	return diskimg.CheckDir(l.DiskDir)
}

// CheckTraversable makes sure an unprivileged host uid (a sandbox's root)
// can reach dir: every ancestor needs the execute bit for others.
func CheckTraversable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() && st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is not traversable by sandbox uids (mode %v): run 'chmod o+x %s' or use another directory: %w", p, st.Mode().Perm(), p, errdefs.ErrInvalid)
		}
		if p == "/" {
			return nil
		}
	}
}

// StateDir is one sandbox's state dir, held by its owner lock.
type StateDir struct {
	ID   string
	Path string
	lock *os.File
}

// MakeStateDir makes sandbox id's state dir (ErrConflict if it exists)
// and takes its owner lock: the first thing of a sandbox, before anything
// a reaper could see. The lock is taken blocking: a reaper looking at
// this young dir holds it only for a moment and never takes a young
// sandbox. On failure nothing is left.
func (l *Layout) MakeStateDir(id string) (*StateDir, error) {
	d := &StateDir{ID: id, Path: filepath.Join(l.SandboxesDir(), id)}
	if err := os.Mkdir(d.Path, l.DirMode); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("sandbox %s already exists: %w", id, errdefs.ErrConflict)
		}
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	lock, err := os.OpenFile(filepath.Join(d.Path, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(d.Path)
		return nil, fmt.Errorf("create sandbox %s: lock: %w", id, err)
	}
	d.lock = lock
	return d, nil
}

// Mkdirs makes directories in the state dir.
func (d *StateDir) Mkdirs(mode os.FileMode, names ...string) error {
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(d.Path, n), mode); err != nil {
			return fmt.Errorf("create sandbox %s: %w", d.ID, err)
		}
	}
	return nil
}

// Info is info.json in a sandbox's state dir: what a reaper needs.
type Info struct {
	ID       string `json:"id"`
	OwnerPID int    `json:"owner_pid"`
	// InitPID and Slot: the sandbox's init and its uid slot, which a
	// reaper kills if it still runs as the slot's root (zero: none).
	InitPID int       `json:"init_pid,omitempty"`
	Slot    int       `json:"slot,omitempty"`
	Created time.Time `json:"created"`
}

// WriteInfo writes info.json; ID, OwnerPID and Created are filled in.
// Until it exists, a young sandbox counts as being created.
func (d *StateDir) WriteInfo(info Info) error {
	info.ID, info.OwnerPID, info.Created = d.ID, os.Getpid(), time.Now().UTC()
	b, err := json.Marshal(info)
	if err == nil {
		err = os.WriteFile(filepath.Join(d.Path, "info.json"), b, 0o600)
	}
	if err != nil {
		return fmt.Errorf("create sandbox %s: info: %w", d.ID, err)
	}
	return nil
}

// Remove renames the state dir .dead-ID, then removes it; the lock is
// still held (Unlock releases it), so a reaper never mistakes a
// half-removed dir for a crashed sandbox.
func (d *StateDir) Remove() error {
	dead := filepath.Join(filepath.Dir(d.Path), ".dead-"+d.ID)
	dir := d.Path
	if err := os.Rename(d.Path, dead); err == nil {
		dir = dead
	}
	return os.RemoveAll(dir)
}

// Unlock releases the owner lock.
func (d *StateDir) Unlock() {
	if d.lock != nil {
		d.lock.Close()
		d.lock = nil
	}
}

// LogTail is the last 2000 bytes of the file at path as " (label:
// ...)", or "" if it is empty or missing.
func LogTail(path, label string) string {
	b, _ := os.ReadFile(path)
	if len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return " (" + label + ": " + strings.TrimSpace(string(b)) + ")"
}
