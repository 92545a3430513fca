package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/runtime/hostside"
)

// Defaults applied when a Spec leaves a limit at zero.
const (
	DefaultMemory   = 512 << 20
	DefaultPids     = 256
	DefaultDisk     = 1 << 30
	DefaultTmp      = 256 << 20
	DefaultInodes   = 200000
	DefaultNoFile   = 4096
	DefaultHostname = hostside.DefaultHostname
	// DefaultPtys: terminals at once. Every sandbox's devpts draws on
	// the host's one pool (kernel.pty.max less kernel.pty.reserve, 3072
	// by default), so each takes a small share.
	DefaultPtys = 16
	// MaxPtys is the most one sandbox may have: the kernel's default
	// kernel.pty.max less its reserve.
	MaxPtys = 3072

	// MinPids is the smallest pids limit: the agent's own threads count
	// against RLIMIT_NPROC too.
	MinPids = 32
	// agentPidsReserve is what the pids cgroup allows above the limit.
	agentPidsReserve = 64

	// SandboxUID is the uid commands run as inside every sandbox.
	SandboxUID = 1000
	// UIDRangeStart is the first host uid given to sandboxes; each sandbox
	// gets its own 65536 uids starting at UIDRangeStart + slot*65536
	// (package hostside's uid slots).
	UIDRangeStart = hostside.UIDRangeStart
	uidRangeSize  = hostside.UIDRangeSize
)

// Config configures the backend. The zero value is usable (defaults below).
type Config struct {
	// StateDir holds per-sandbox state; default /run/airlock.
	StateDir string
	// CgroupParent is the cgroup under which sandboxes are placed; default
	// "airlock". Reap treats every group under it as this StateDir's, so two
	// state dirs must not share a parent.
	CgroupParent string
	// DiskDir holds the sandboxes' disk images (sparse ext4 files, each
	// unlinked once its loop device holds it, and the blank base images
	// they are copied from); default StateDir/disks. It must be on a disk,
	// not in memory (see diskimg.CheckDir), and no other backend's.
	DiskDir string
	// SlotDir holds the uid-range slot locks; default /run/airlock/slots.
	// It is shared by every airlock on the host, whatever its StateDir, so
	// that no two sandboxes ever share host uids.
	SlotDir string
	// DieWithOwner kills every sandbox when the creating process dies,
	// even by SIGKILL. One-shot `airlock run` sets it.
	DieWithOwner bool
	// Logf logs operational messages; nil discards them.
	Logf func(format string, args ...any)
}

// Backend is the native Linux backend.
type Backend struct {
	// Reaped lists the leftover sandboxes New removed.
	Reaped []string

	cfg  Config
	hier *cgroups.Hierarchy
	lay  hostside.Layout
	exe  string
	// testFailAfter, if set (by tests only), runs after each step of a
	// Create, with its name and the sandbox so far; its error fails the
	// Create there.
	testFailAfter func(step string, s *sandbox) error
}

// New checks that this host can run native sandboxes and reaps what
// earlier, killed airlock processes left behind.
func New(cfg Config) (*Backend, error) {
	if cfg.StateDir == "" {
		cfg.StateDir = "/run/airlock"
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = "airlock"
	}
	if cfg.SlotDir == "" {
		cfg.SlotDir = "/run/airlock/slots"
	}
	if cfg.DiskDir == "" {
		cfg.DiskDir = filepath.Join(cfg.StateDir, "disks")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("native backend needs root to map sandbox uids and create cgroups: run airlock as root (e.g. with sudo): %w", errdefs.ErrUnsupported)
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || strings.TrimSpace(string(b)) == "0" {
		return nil, fmt.Errorf("native backend needs user namespaces: set sysctl user.max_user_namespaces > 0: %w", errdefs.ErrUnsupported)
	}
	hier, err := cgroups.Detect()
	if err != nil {
		return nil, fmt.Errorf("native backend: %w", err)
	}
	b := &Backend{cfg: cfg, hier: hier}
	// state dirs 0711: the sandbox's root (an unprivileged host uid)
	// must traverse them
	b.lay = hostside.Layout{StateDir: cfg.StateDir, DiskDir: cfg.DiskDir, SlotDir: cfg.SlotDir,
		CgroupParent: cfg.CgroupParent, Hier: hier, DirMode: 0o711}
	if err := b.lay.Prepare(); err != nil {
		return nil, fmt.Errorf("native backend: %w", err)
	}
	if b.exe, err = sandboxExe(filepath.Join(cfg.StateDir, "bin")); err != nil {
		return nil, fmt.Errorf("native backend: %w", err)
	}
	ids, err := b.Reap()
	if err != nil {
		cfg.Logf("reap leftovers: %v", err)
	}
	b.Reaped = ids
	return b, nil
}

// diskImage is where sandbox id's disk image is made (and unlinked once
// attached).
func (b *Backend) diskImage(id string) string { return b.lay.DiskImage(id) }

// Name implements runtime.Backend.
func (b *Backend) Name() string { return "native" }

// Capabilities implements runtime.Backend.
func (b *Backend) Capabilities() runtime.Capabilities { return runtime.Capabilities{Pause: true} }

// CgroupMode reports "v1" or "v2".
func (b *Backend) CgroupMode() string { return hostside.CgroupMode(b.hier) }

func withDefaults(l runtime.Limits) (runtime.Limits, error) {
	if l.MemoryBytes < 0 || l.Pids < 0 || l.CPUs < 0 || l.DiskBytes < 0 || l.TmpBytes < 0 || l.Inodes < 0 || l.Lifetime < 0 {
		return l, fmt.Errorf("limits must not be negative: %w", errdefs.ErrInvalid)
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMemory
	}
	if l.MemoryBytes < 16<<20 {
		return l, fmt.Errorf("memory limit %d bytes is below the 16MiB minimum: %w", l.MemoryBytes, errdefs.ErrInvalid)
	}
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.Pids < MinPids {
		return l, fmt.Errorf("pids limit %d is below the minimum of %d: %w", l.Pids, MinPids, errdefs.ErrInvalid)
	}
	if l.DiskBytes == 0 {
		l.DiskBytes = DefaultDisk
	}
	if l.TmpBytes == 0 {
		l.TmpBytes = DefaultTmp
	}
	if l.Inodes == 0 {
		l.Inodes = DefaultInodes
	}
	if l.CPUs != 0 && l.CPUs < 0.01 {
		return l, fmt.Errorf("cpu limit %g is below the minimum of 0.01: %w", l.CPUs, errdefs.ErrInvalid)
	}
	// an ext4 inode table beyond a quarter of the disk makes no sense
	if maxInodes := max(l.DiskBytes/1024/4, 1024); l.Inodes > maxInodes {
		l.Inodes = maxInodes
	}
	if l.DiskBytes < 4<<20 {
		return l, fmt.Errorf("disk limit %d bytes is below the 4MiB minimum: %w", l.DiskBytes, errdefs.ErrInvalid)
	}
	if l.NoFile == 0 {
		l.NoFile = DefaultNoFile
	}
	if l.Ptys == 0 {
		l.Ptys = DefaultPtys
	}
	if l.Ptys < 0 || l.Ptys > MaxPtys {
		return l, fmt.Errorf("pty limit %d: from 1 to %d: %w", l.Ptys, MaxPtys, errdefs.ErrInvalid)
	}
	return l, nil
}

// Create implements runtime.Backend: the steps of creation.steps, in
// order, with a rollback (package hostside); a failed Create leaves
// nothing behind.
func (b *Backend) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	c, err := b.plan(spec)
	if err != nil {
		return nil, err
	}
	warmCodec.Do(func() { go proto.WarmCodec() }) // for the init message
	if err := hostside.RunSteps(ctx, c.steps(), c.after); err != nil {
		return nil, err
	}
	return c.s, nil
}

// warmCodec: the first Create warms the agent message codec.
var warmCodec sync.Once

// Reap removes the state, cgroups and processes of sandboxes whose owner
// process is gone (see hostside.Layout.Reap). It returns the ids it
// reaped.
func (b *Backend) Reap() ([]string, error) { return b.lay.Reap() }

// hostTID maps a thread id in the sandbox's pid namespace to the host's.
func hostTID(initPID, nsTID int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/task", initPID)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				f := strings.Fields(v)
				if len(f) >= 2 && f[len(f)-1] == strconv.Itoa(nsTID) {
					return strconv.Atoi(f[0])
				}
			}
		}
	}
	return 0, fmt.Errorf("thread %d of sandbox init %d not found", nsTID, initPID)
}

// HostCost implements runtime.HostCoster: the pids cgroup's maximum (the
// commands' limit and the agent's reserve) and the devpts maximum.
func (b *Backend) HostCost(l runtime.Limits) (runtime.HostCost, error) {
	lim, err := withDefaults(l)
	if err != nil {
		return runtime.HostCost{}, err
	}
	return runtime.HostCost{Pids: HostTasks(lim.Pids), Ptys: lim.Ptys}, nil
}

// HostTasks is the most host tasks a sandbox of pids processes takes: its
// pids cgroup's maximum.
func HostTasks(pids int64) int64 { return pids + agentPidsReserve }
