package gvisor

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agentbin"
	"github.com/airlock-dev/airlock/internal/runtime/hostside"
)

// Defaults applied when a Spec leaves a limit at zero: the native
// backend's.
const (
	DefaultMemory   = 512 << 20
	DefaultPids     = 256
	DefaultDisk     = 1 << 30
	DefaultInodes   = 200000
	DefaultNoFile   = 4096
	DefaultHostname = hostside.DefaultHostname

	// MinPids is the smallest process limit accepted.
	MinPids = 32

	// gvisorReserve is the memory the cgroup allows above the sandbox's
	// limit for gVisor itself (its kernel, the gofer, runsc).
	gvisorReserve = 64 << 20
	// hostThreadsPerPid caps the host tasks (threads) of one sandbox per
	// sandbox process allowed: the host's cost, not the sandbox's process
	// count (RLIMIT_NPROC, counted by gVisor, is that). The ptrace
	// platform needs about 15 host tasks per sandbox process.
	hostThreadsPerPid = 32
	hostThreadsBase   = 256

	// SandboxUID is the uid commands run as inside every sandbox.
	SandboxUID = 1000
)

// Config configures the backend. The zero value is usable.
type Config struct {
	// StateDir holds per-sandbox state; default /run/airlock-oci.
	StateDir string
	// DiskDir holds the sandboxes' disk images, as native.Config.DiskDir;
	// default StateDir/disks. On a disk, and no other backend's.
	DiskDir string
	// CgroupParent is the cgroup under which sandboxes are placed; default
	// "airlock-oci". Reap treats every group under it as this StateDir's.
	CgroupParent string
	// Runsc is the runsc binary (a path, or a name looked up in PATH);
	// default "runsc".
	Runsc string
	// Platform is runsc's platform: "systrap" (current runsc) or "ptrace"
	// (the only one of Debian 12's); empty: runsc's default. "kvm" is
	// refused: it hangs on these machines.
	Platform string
	// DieWithOwner kills every sandbox when the creating process dies,
	// even by SIGKILL. One-shot `airlock run` sets it.
	DieWithOwner bool
	// Logf logs operational messages; nil discards them.
	Logf func(format string, args ...any)
}

// Backend runs sandboxes under gVisor.
type Backend struct {
	// Reaped lists the leftover sandboxes New removed.
	Reaped []string

	cfg      Config
	hier     *cgroups.Hierarchy
	lay      hostside.Layout
	runsc    string
	version  string
	platform string // the platform in effect
	agentBin string
	// agentLoader is agentBin's ELF interpreter ("": static, as
	// `make build` makes airlock). gVisor loads the agent from the
	// sandbox's root, so a dynamic agent's loader and libraries would
	// be an image template's: refused (plan).
	agentLoader string
	// testTrustImageLoader (tests only) lets a dynamic agent (the cgo
	// test binary) start in image templates the tests made, whose
	// loader is the host's or a real distribution's.
	testTrustImageLoader bool
	// testFailAfter, if set (by tests only), runs after each step of a
	// Create, with its name and the sandbox so far; its error fails the
	// Create there.
	testFailAfter func(step string, s *sandbox) error
}

// InstallHint says how to get runsc; part of every "not installed" error.
const InstallHint = `install gVisor's runsc: "apt-get install -y runsc" (Debian 12; ptrace platform), ` +
	`or a current one with "CGO_ENABLED=0 go install gvisor.dev/gvisor/runsc@latest" (systrap platform; then --runsc or AIRLOCK_RUNSC=$(go env GOPATH)/bin/runsc)`

// New checks that this host can run gVisor sandboxes and reaps what
// earlier, killed airlock processes left behind.
func New(cfg Config) (*Backend, error) {
	if cfg.StateDir == "" {
		cfg.StateDir = "/run/airlock-oci"
	}
	if cfg.DiskDir == "" {
		cfg.DiskDir = filepath.Join(cfg.StateDir, "disks")
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = "airlock-oci"
	}
	if cfg.Runsc == "" {
		cfg.Runsc = "runsc"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("gvisor backend needs root to run runsc and create cgroups: run airlock as root (e.g. with sudo): %w", errdefs.ErrUnsupported)
	}
	bin, err := exec.LookPath(cfg.Runsc)
	if err != nil {
		return nil, fmt.Errorf("gvisor backend: runsc not found (%s): %s: %w", cfg.Runsc, InstallHint, errdefs.ErrUnsupported)
	}
	b := &Backend{cfg: cfg, runsc: bin}
	platforms, def, version, err := probeRunsc(bin)
	if err != nil {
		return nil, fmt.Errorf("gvisor backend: %s does not work: %v: %s: %w", bin, err, InstallHint, errdefs.ErrUnsupported)
	}
	b.version = version
	switch p := cfg.Platform; {
	case p == "kvm":
		return nil, fmt.Errorf("gvisor backend: the kvm platform is not supported (it hangs on these machines): use systrap or ptrace: %w", errdefs.ErrInvalid)
	case p == "":
		b.platform = def
	case !strings.Contains(","+strings.Join(platforms, ",")+",", ","+p+","):
		hint := ""
		if p == "systrap" {
			hint = ` (systrap needs a runsc from 2023 or later: "CGO_ENABLED=0 go install gvisor.dev/gvisor/runsc@latest")`
		}
		return nil, fmt.Errorf("gvisor backend: %s (version %s) has no %q platform, only %s%s: %w", bin, version, p, strings.Join(platforms, ", "), hint, errdefs.ErrUnsupported)
	default:
		b.platform = p
	}
	if b.hier, err = cgroups.Detect(); err != nil {
		return nil, fmt.Errorf("gvisor backend: %w", err)
	}
	b.lay = hostside.Layout{StateDir: cfg.StateDir, DiskDir: cfg.DiskDir, CgroupParent: cfg.CgroupParent, Hier: b.hier, DirMode: 0o700}
	if err := b.lay.Prepare(); err != nil {
		return nil, fmt.Errorf("gvisor backend: %w", err)
	}
	// The lean agent when this binary carries it, else this binary.
	if b.agentBin, err = agentbin.Put(filepath.Join(cfg.StateDir, "bin")); err != nil {
		return nil, fmt.Errorf("gvisor backend: the agent binary: %w", err)
	}
	if b.agentLoader, err = elfInterp(b.agentBin); err != nil {
		return nil, fmt.Errorf("gvisor backend: own binary: %w", err)
	}
	ids, err := b.Reap()
	if err != nil {
		cfg.Logf("reap leftovers: %v", err)
	}
	b.Reaped = ids
	return b, nil
}

var platformLine = lazyre.New(`specifies which platform to use: ([^.\n]*)`)

// probeRunsc asks runsc for its platforms (the default first) and version.
func probeRunsc(bin string) (platforms []string, def, version string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "flags").CombinedOutput()
	if err != nil {
		return nil, "", "", fmt.Errorf("runsc flags: %v: %s", err, bytesHead(out))
	}
	m := platformLine().FindSubmatch(out)
	if m == nil {
		return nil, "", "", errors.New("runsc flags names no platforms")
	}
	for _, p := range strings.Split(string(m[1]), ",") {
		p = strings.TrimSpace(p)
		name, isDef := strings.CutSuffix(p, " (default)")
		if name == "" {
			continue
		}
		platforms = append(platforms, name)
		if isDef {
			def = name
		}
	}
	if def == "" && len(platforms) > 0 {
		def = platforms[0]
	}
	if v, err := exec.CommandContext(ctx, bin, "--version").Output(); err == nil {
		first, _, _ := strings.Cut(string(v), "\n")
		version = strings.TrimSpace(strings.TrimPrefix(first, "runsc version"))
	}
	return platforms, def, version, nil
}

func bytesHead(b []byte) string {
	if len(b) > 300 {
		b = b[:300]
	}
	return strings.TrimSpace(string(b))
}

// Name implements runtime.Backend.
func (b *Backend) Name() string { return "gvisor" }

// Capabilities implements runtime.Backend.
func (b *Backend) Capabilities() runtime.Capabilities { return runtime.Capabilities{Pause: true} }

// Platform is the runsc platform sandboxes run on.
func (b *Backend) Platform() string { return b.platform }

// Legacy says whether runsc is gVisor from before 2023 (Debian 12's
// package, version 0.0~2022...), whose differences the package doc lists.
func (b *Backend) Legacy() bool {
	d, ok := strings.CutPrefix(b.version, "0.0~")
	return ok && len(d) >= 8 && d[:8] < "20230101"
}

// Runsc is the runsc binary and its version.
func (b *Backend) Runsc() (path, version string) { return b.runsc, b.version }

// withDefaults fills in and checks the limits. TmpBytes must be zero:
// /tmp is gVisor's own tmpfs (runsc mounts one), in the sandbox's memory.
func withDefaults(l runtime.Limits) (runtime.Limits, error) {
	if l.MemoryBytes < 0 || l.Pids < 0 || l.CPUs < 0 || l.DiskBytes < 0 || l.TmpBytes < 0 || l.Inodes < 0 || l.Lifetime < 0 {
		return l, fmt.Errorf("limits must not be negative: %w", errdefs.ErrInvalid)
	}
	if l.Ptys != 0 {
		return l, fmt.Errorf("gvisor backend: a pty limit is not supported (gVisor's terminals are its own, not drawn from the host's pool, and runsc sets no maximum; they take the sandbox's memory): leave ptys unset: %w", errdefs.ErrUnsupported)
	}
	if l.TmpBytes != 0 {
		return l, fmt.Errorf("gvisor backend: a separate /tmp limit is not supported (/tmp is gVisor's own tmpfs, held in the sandbox's memory and bounded by its memory limit): leave tmp_bytes unset: %w", errdefs.ErrUnsupported)
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
	if l.DiskBytes < 4<<20 {
		return l, fmt.Errorf("disk limit %d bytes is below the 4MiB minimum: %w", l.DiskBytes, errdefs.ErrInvalid)
	}
	if l.Inodes == 0 {
		l.Inodes = DefaultInodes
	}
	if maxInodes := max(l.DiskBytes/1024/4, 1024); l.Inodes > maxInodes {
		l.Inodes = maxInodes
	}
	if l.CPUs != 0 && l.CPUs < 0.01 {
		return l, fmt.Errorf("cpu limit %g is below the minimum of 0.01: %w", l.CPUs, errdefs.ErrInvalid)
	}
	if l.NoFile == 0 {
		l.NoFile = DefaultNoFile
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
	if err := hostside.RunSteps(ctx, c.steps(), c.after); err != nil {
		return nil, err
	}
	return c.s, nil
}

// Reap removes the state and kills the processes (through their cgroup)
// of sandboxes whose owner process is gone (see hostside.Layout.Reap).
// It returns the ids it reaped.
func (b *Backend) Reap() ([]string, error) { return b.lay.Reap() }

// RemoveCgroupParent removes the (empty) cgroup parent of this backend's
// sandboxes.
func (b *Backend) RemoveCgroupParent() error { return b.lay.RemoveCgroupParent() }

// Census counts what sandboxes of this backend hold on the host; with no
// sandbox running every field is zero.
type Census struct {
	StateDirs int `json:"state_dirs"`
	Cgroups   int `json:"cgroups"`
}

// Census takes a census now.
func (b *Backend) Census() (Census, error) {
	n, err := b.lay.Count()
	return Census{StateDirs: n.StateDirs, Cgroups: n.Cgroups}, err
}

// HostCost implements runtime.HostCoster: the host tasks the sandbox's
// cgroup allows (runsc, the gofer and gVisor's kernel, which runs the
// sandbox's processes on host threads); no host terminal (gVisor's are
// its own).
func (b *Backend) HostCost(l runtime.Limits) (runtime.HostCost, error) {
	lim, err := withDefaults(l)
	if err != nil {
		return runtime.HostCost{}, err
	}
	return runtime.HostCost{Pids: hostThreadsBase + hostThreadsPerPid*lim.Pids}, nil
}

// elfInterp is the ELF interpreter (dynamic loader) exe names, "" for a
// static binary.
func elfInterp(exe string) (string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}
