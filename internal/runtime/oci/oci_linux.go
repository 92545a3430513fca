package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/agent"
	"github.com/airlock-dev/airlock/internal/agent/client"
	"github.com/airlock-dev/airlock/internal/cgroups"
	"github.com/airlock-dev/airlock/internal/diskimg"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Defaults applied when a Spec leaves a limit at zero: the native
// backend's.
const (
	DefaultMemory   = 512 << 20
	DefaultPids     = 256
	DefaultDisk     = 1 << 30
	DefaultInodes   = 200000
	DefaultNoFile   = 4096
	DefaultHostname = "airlock"

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
	SandboxUID  = 1000
	sandboxHome = "/home/sandbox"
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
	runsc    string
	version  string
	platform string // the platform in effect
	agentBin string
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
	for _, d := range []string{cfg.StateDir, b.sandboxesDir(), b.cfg.DiskDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("gvisor backend: state dir: %w", err)
		}
	}
	if err := diskimg.CheckDir(b.cfg.DiskDir); err != nil {
		return nil, fmt.Errorf("gvisor backend: %w", err)
	}
	if b.agentBin, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("gvisor backend: find own binary: %w", err)
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

func (b *Backend) sandboxesDir() string { return filepath.Join(b.cfg.StateDir, "sandboxes") }

// diskImage is where sandbox id's disk image is made (and unlinked once
// attached).
func (b *Backend) diskImage(id string) string { return diskimg.Image(b.cfg.DiskDir, id) }

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

// stateInfo is info.json in each sandbox's state dir: what a reaper needs.
type stateInfo struct {
	ID       string    `json:"id"`
	OwnerPID int       `json:"owner_pid"`
	Created  time.Time `json:"created"`
}

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

// Create implements runtime.Backend.
func (b *Backend) Create(ctx context.Context, spec runtime.Spec) (_ runtime.Sandbox, retErr error) {
	lim, err := withDefaults(spec.Limits)
	if err != nil {
		return nil, err
	}
	if spec.RootFS == "" || !filepath.IsAbs(spec.RootFS) {
		return nil, fmt.Errorf("root filesystem must be an absolute path: %w", errdefs.ErrInvalid)
	}
	if st, err := os.Stat(spec.RootFS); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("root filesystem %s is not a directory: %w", spec.RootFS, errdefs.ErrNotFound)
	}
	var binds []bindMount
	for _, bd := range spec.Binds {
		if !filepath.IsAbs(bd.Source) || !filepath.IsAbs(bd.Target) || strings.Contains(bd.Target, "..") {
			return nil, fmt.Errorf("bind %s:%s: paths must be absolute and clean: %w", bd.Source, bd.Target, errdefs.ErrInvalid)
		}
		binds = append(binds, bindMount{source: bd.Source, target: bd.Target})
	}
	if spec.Workspace != "" {
		st, err := os.Stat(spec.Workspace)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", spec.Workspace, errdefs.ErrNotFound)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("workspace %s is not a directory: %w", spec.Workspace, errdefs.ErrInvalid)
		}
	}
	id := spec.ID
	if id == "" {
		id = runtime.NewID()
	} else if !runtime.ValidID(id) {
		return nil, fmt.Errorf("sandbox id %q: use lowercase letters, digits and '-': %w", id, errdefs.ErrInvalid)
	}
	hostname := spec.Hostname
	if hostname == "" {
		hostname = DefaultHostname
	}

	t0 := time.Now()
	s := &sandbox{b: b, id: id, lim: lim, done: make(chan struct{}), exited: make(chan struct{})}
	s.dir = filepath.Join(b.sandboxesDir(), id)
	defer func() {
		if retErr != nil {
			s.teardown()
		}
	}()
	// 1. state dir + owner lock, before anything a reaper could see
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("sandbox %s already exists: %w", id, errdefs.ErrConflict)
		}
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	s.madeDir = true
	lock, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: lock: %w", id, err)
	}
	s.lock = lock
	for _, d := range []string{"disk", "rootfs", "runsc"} {
		if err := os.Mkdir(filepath.Join(s.dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	info := stateInfo{ID: id, OwnerPID: os.Getpid(), Created: time.Now().UTC()}
	ib, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(s.dir, "info.json"), ib, 0o600); err != nil {
		return nil, err
	}
	trace(t0, "state dir")
	// 2. the disk, prepared while the cgroup and bundle are made
	type diskRes struct {
		f   *os.File
		err error
	}
	diskc := make(chan diskRes, 1)
	go func() {
		if err := diskimg.CheckFree(b.cfg.DiskDir, lim.DiskBytes); err != nil {
			diskc <- diskRes{nil, fmt.Errorf("disk: %w", err)}
			return
		}
		base, err := diskimg.Base(b.cfg.DiskDir, lim.DiskBytes, lim.Inodes)
		if err != nil {
			diskc <- diskRes{nil, err}
			return
		}
		f, err := diskimg.Mount(base, b.diskImage(id))
		diskc <- diskRes{f, err}
	}()
	diskTaken := false
	defer func() {
		if !diskTaken {
			if r := <-diskc; r.f != nil {
				r.f.Close()
			}
		}
	}()
	// 3. cgroup: the whole sandbox (runsc, the gofer, gVisor's kernel and
	// every process in it) lives in it
	g, err := b.hier.Create(b.cfg.CgroupParent, id, cgroups.Limits{MemoryBytes: lim.MemoryBytes + gvisorReserve, Pids: hostThreadsBase + hostThreadsPerPid*lim.Pids, CPUs: lim.CPUs})
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	s.cg = g
	trace(t0, "cgroup")
	// 4. the bundle
	empty := filepath.Join(s.dir, "empty")
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		return nil, err
	}
	for i, bd := range binds {
		if path.Clean(bd.target) == "/usr" {
			if binds[i].masks, err = usrMasks(bd.source, bd.target, empty, filepath.Join(s.dir, "usr-kept")); err != nil {
				return nil, fmt.Errorf("create sandbox %s: hide host configuration: %w", id, err)
			}
		}
	}
	nproc := uint64(lim.Pids)
	bundle := bundleSpec(filepath.Join(s.dir, "rootfs"), hostname, b.agentBin, binds,
		rlimits{nofile: lim.NoFile, nproc: nproc, fsize: uint64(lim.DiskBytes)})
	if err := writeBundle(s.dir, bundle); err != nil {
		return nil, fmt.Errorf("create sandbox %s: bundle: %w", id, err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		if err := agent.SetBuffers(fd); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, fmt.Errorf("create sandbox %s: %w", id, err)
		}
	}
	hostEnd, childEnd := os.NewFile(uintptr(fds[0]), "agent-host"), os.NewFile(uintptr(fds[1]), "agent-child")
	s.conn = agent.NewConn(hostEnd)
	logf, err := os.OpenFile(filepath.Join(s.dir, "init.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		childEnd.Close()
		return nil, err
	}
	args := []string{"--root", filepath.Join(s.dir, "runsc"), "--network=none", "--ignore-cgroups", "--platform=" + b.platform, "run", "--bundle", s.dir, id}
	cmd := exec.Command(b.runsc, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childEnd, logf, logf
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = &unix.SysProcAttr{}
	if b.cfg.DieWithOwner {
		cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
	}
	dr := <-diskc
	diskTaken = true
	if dr.err != nil {
		childEnd.Close()
		logf.Close()
		return nil, fmt.Errorf("create sandbox %s: %w", id, dr.err)
	}
	trace(t0, "disk")
	// 5. runsc, in a mount namespace of its own that holds the root
	err = s.launch(cmd, dr.f, spec.RootFS, binds)
	dr.f.Close()
	childEnd.Close()
	logf.Close()
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w%s", id, err, s.initLog())
	}
	trace(t0, "runsc started")
	// 6. configure the agent and wait for it
	scratch := []string{"/tmp", sandboxHome, "/var/tmp", "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm"}
	init := &agent.InitConfig{
		Hostname: hostname, UID: SandboxUID, GID: SandboxUID, Home: sandboxHome,
		Writable: append([]string{"/workspace"}, scratch...), Scratch: scratch,
		ScopeRoots: []string{"/workspace", sandboxHome}, Trace: os.Getenv("AIRLOCK_TRACE") != "",
		Network: spec.Network != nil, NoFileActivity: spec.NoFileActivity, MaxProxyConns: spec.MaxProxyConns,
	}
	if err := s.conn.Send(&agent.Message{Op: agent.OpInit, Version: agent.ProtocolVersion, Init: init}); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	ready, err := s.recvDirect(ctx)
	trace(t0, "agent ready")
	if ready != nil && ready.Timings != "" {
		for _, f := range strings.Fields(ready.Timings) {
			if k, v, ok := strings.Cut(f, "@"); ok {
				if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
					trace(t0, fmt.Sprintf("agent %s at +%.3fms", k, float64(ns-t0.UnixNano())/1e6))
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: waiting for the agent: %w%s", id, err, s.initLog())
	}
	if ready.Op != agent.OpReady {
		return nil, fmt.Errorf("create sandbox %s: agent failed: %s%s", id, ready.Error, s.initLog())
	}
	s.seccomp = ready.Seccomp
	s.created = time.Now()
	s.Client = client.New(s.conn, client.Options{
		BaseEnv:  append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sandboxHome, "USER=sandbox", "LOGNAME=sandbox", "LANG=C.UTF-8", "TMPDIR=/tmp", "SHELL=/bin/bash"}, spec.Env...),
		Meter:    s.meter,
		RelayTTY: true,
		Network:  spec.Network,
		RelayNet: true,
		Trace:    trace,
		// the agent relays and caps too: what it holds is bounded by it
		MaxProxyConns: spec.MaxProxyConns,
	})
	go func() {
		select {
		case <-s.exited:
		case <-s.Client.Done():
		}
		s.markDone()
	}()
	if spec.Workspace != "" {
		if err := s.ImportDir(ctx, spec.Workspace, "/workspace"); err != nil {
			return nil, fmt.Errorf("create sandbox %s: copy workspace: %w", id, err)
		}
	}
	if lim.Lifetime > 0 {
		s.lifeMu.Lock()
		s.lifeTimer = time.AfterFunc(lim.Lifetime, func() {
			b.cfg.Logf("sandbox %s reached its lifetime of %s; destroying", id, lim.Lifetime)
			_ = s.Destroy(context.Background())
		})
		s.lifeMu.Unlock()
	}
	return s, nil
}

// Reap removes the state and kills the processes (through their cgroup)
// of sandboxes whose owner process is gone. It returns the ids it reaped.
func (b *Backend) Reap() ([]string, error) {
	ents, err := os.ReadDir(b.sandboxesDir())
	if err != nil {
		return nil, err
	}
	var reaped []string
	var errs []error
	known := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		id := strings.TrimPrefix(name, ".dead-")
		known[id] = true
		dir := filepath.Join(b.sandboxesDir(), name)
		young := true
		if st, err := os.Stat(dir); err == nil {
			young = time.Since(st.ModTime()) < 2*time.Minute
		}
		lock, err := openLock(filepath.Join(dir, "lock"))
		if err != nil && !(errors.Is(err, os.ErrNotExist) && !young) {
			continue // owner alive, or too young to judge
		}
		if _, err := os.Stat(filepath.Join(dir, "info.json")); err != nil && young {
			if lock != nil {
				lock.Close()
			}
			continue
		}
		if g, err := b.hier.Open(b.cfg.CgroupParent, id); err == nil {
			if err := g.Destroy(); err != nil {
				errs = append(errs, fmt.Errorf("reap %s: %w", id, err))
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("reap %s: %w", id, err))
		}
		if lock != nil {
			lock.Close()
		}
		_ = os.Remove(b.diskImage(id)) // a crash between its copy and its attach
		reaped = append(reaped, id)
	}
	// disk images of sandboxes whose state dir is gone
	diskimg.ReapImages(b.cfg.DiskDir, func(id string) bool {
		_, err := os.Stat(filepath.Join(b.sandboxesDir(), id))
		return err == nil
	})
	if names, err := b.hier.List(b.cfg.CgroupParent); err == nil {
		for _, n := range names {
			if known[n] {
				continue
			}
			if _, err := os.Stat(filepath.Join(b.sandboxesDir(), n)); err == nil {
				continue
			}
			if g, err := b.hier.Open(b.cfg.CgroupParent, n); err == nil {
				if err := g.Destroy(); err != nil {
					errs = append(errs, err)
				} else {
					reaped = append(reaped, n)
				}
			}
		}
	}
	return reaped, errors.Join(errs...)
}

// openLock flocks an existing lock file without waiting.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// RemoveCgroupParent removes the (empty) cgroup parent of this backend's
// sandboxes.
func (b *Backend) RemoveCgroupParent() error { return b.hier.RemoveParent(b.cfg.CgroupParent) }

// Census counts what sandboxes of this backend hold on the host; with no
// sandbox running every field is zero.
type Census struct {
	StateDirs int `json:"state_dirs"`
	Cgroups   int `json:"cgroups"`
}

// Census takes a census now.
func (b *Backend) Census() (Census, error) {
	var c Census
	ents, err := os.ReadDir(b.sandboxesDir())
	if err != nil && !os.IsNotExist(err) {
		return c, err
	}
	c.StateDirs = len(ents)
	if names, err := b.hier.List(b.cfg.CgroupParent); err == nil {
		c.Cgroups = len(names)
	}
	return c, nil
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
