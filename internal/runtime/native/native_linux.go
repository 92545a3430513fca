package native

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/agent"
	"github.com/airlock-dev/airlock/internal/agent/client"
	"github.com/airlock-dev/airlock/internal/cgroups"
	"github.com/airlock-dev/airlock/internal/diskimg"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Defaults applied when a Spec leaves a limit at zero.
const (
	DefaultMemory   = 512 << 20
	DefaultPids     = 256
	DefaultDisk     = 1 << 30
	DefaultTmp      = 256 << 20
	DefaultInodes   = 200000
	DefaultNoFile   = 4096
	DefaultHostname = "airlock"
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
	// sandboxHome is the command user's home directory.
	sandboxHome = "/home/sandbox"
	// UIDRangeStart is the first host uid given to sandboxes; each sandbox
	// gets its own 65536 uids starting at UIDRangeStart + slot*65536.
	UIDRangeStart = 0x10000000
	uidRangeSize  = 65536
	maxSlots      = 16384
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
	exe  string
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
	for _, d := range []string{cfg.StateDir, b.sandboxesDir(), b.slotsDir()} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("native backend: state dir: %w", err)
		}
		// the sandbox's root (an unprivileged host uid) must traverse these
		if err := os.Chmod(d, 0o711); err != nil {
			return nil, err
		}
	}
	if err := checkTraversable(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("native backend: state dir: %w", err)
	}
	if err := os.MkdirAll(cfg.DiskDir, 0o700); err != nil {
		return nil, fmt.Errorf("native backend: disks dir: %w", err)
	}
	if err := diskimg.CheckDir(cfg.DiskDir); err != nil {
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

func (b *Backend) sandboxesDir() string { return filepath.Join(b.cfg.StateDir, "sandboxes") }

// diskImage is where sandbox id's disk image is made (and unlinked once
// attached).
func (b *Backend) diskImage(id string) string { return diskimg.Image(b.cfg.DiskDir, id) }
func (b *Backend) slotsDir() string           { return b.cfg.SlotDir }

// Name implements runtime.Backend.
func (b *Backend) Name() string { return "native" }

// Capabilities implements runtime.Backend.
func (b *Backend) Capabilities() runtime.Capabilities { return runtime.Capabilities{Pause: true} }

// CgroupMode reports "v1" or "v2".
func (b *Backend) CgroupMode() string {
	if b.hier.Mode() == cgroups.V2 {
		return "v2"
	}
	return "v1"
}

// info.json in each sandbox's state dir: what a reaper needs.
type stateInfo struct {
	ID       string    `json:"id"`
	OwnerPID int       `json:"owner_pid"`
	InitPID  int       `json:"init_pid"`
	Slot     int       `json:"slot"`
	Created  time.Time `json:"created"`
}

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

// Create implements runtime.Backend.
func (b *Backend) Create(ctx context.Context, spec runtime.Spec) (_ runtime.Sandbox, retErr error) {
	lim, err := withDefaults(spec.Limits)
	if err != nil {
		return nil, err
	}
	if spec.RootFS == "" || !filepath.IsAbs(spec.RootFS) {
		return nil, fmt.Errorf("root filesystem must be an absolute path: %w", errdefs.ErrInvalid)
	}
	// Both go into overlayfs's option string, which these characters
	// would cut into more options.
	for _, p := range []string{spec.RootFS, b.cfg.StateDir} {
		if strings.ContainsAny(p, ",:\\") {
			return nil, fmt.Errorf("path %q has a comma, colon or backslash, which an overlay mount cannot take: %w", p, errdefs.ErrInvalid)
		}
	}
	if st, err := os.Stat(spec.RootFS); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("root filesystem %s is not a directory: %w", spec.RootFS, errdefs.ErrNotFound)
	}
	if err := checkTraversable(spec.RootFS); err != nil {
		return nil, fmt.Errorf("root filesystem: %w", err)
	}
	for _, bd := range spec.Binds {
		if !filepath.IsAbs(bd.Source) || !filepath.IsAbs(bd.Target) || strings.Contains(bd.Target, "..") {
			return nil, fmt.Errorf("bind %s:%s: paths must be absolute and clean: %w", bd.Source, bd.Target, errdefs.ErrInvalid)
		}
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
	warmCodec.Do(func() { go agent.WarmCodec() }) // for the init message
	s := &sandbox{b: b, id: id, lim: lim, done: make(chan struct{})}
	s.dir = filepath.Join(b.sandboxesDir(), id)
	defer func() {
		if retErr != nil {
			s.teardown()
		}
	}()
	// 1. state dir + owner lock, before anything a reaper could see
	if err := os.Mkdir(s.dir, 0o711); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("sandbox %s already exists: %w", id, errdefs.ErrConflict)
		}
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	s.madeDir = true
	// Blocking: a reaper looking at this young dir holds the lock only
	// for a moment and never takes a young sandbox.
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
	if err := os.Mkdir(filepath.Join(s.dir, "disk"), 0o755); err != nil {
		return nil, err
	}
	trace(t0, "state dir")
	// 2. a uid range of our own
	slot, slotLock, err := b.allocSlot()
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	s.slot, s.slotLock = slot, slotLock
	s.uidBase = UIDRangeStart + slot*uidRangeSize
	trace(t0, "slot")
	// 3. the disk, prepared while the init process starts
	type diskRes struct {
		f   *os.File
		err error
	}
	diskc := make(chan diskRes, 1)
	go func() {
		f, err := s.makeDisk()
		diskc <- diskRes{f, err}
	}()
	diskTaken := false
	defer func() { // runs before the teardown above: the disk goroutine writes into s.dir
		if !diskTaken {
			if r := <-diskc; r.f != nil {
				r.f.Close()
			}
		}
	}()
	// 4. cgroup: before the init on v2 (it is cloned into it), after on v1
	// (where joining costs an RCU grace period we can overlap with its start).
	// The pids cgroup leaves the agent a reserve above the commands' limit,
	// which RLIMIT_NPROC (per sandbox uid) enforces: a fork bomb must not
	// starve the agent of threads.
	makeCgroup := func() error {
		g, err := b.hier.Create(b.cfg.CgroupParent, id, cgroups.Limits{MemoryBytes: lim.MemoryBytes, Pids: lim.Pids + agentPidsReserve, CPUs: lim.CPUs})
		if err != nil {
			return fmt.Errorf("create sandbox %s: %w", id, err)
		}
		s.cg = g
		trace(t0, "cgroup")
		return nil
	}
	v2 := b.hier.Mode() == cgroups.V2
	if v2 {
		if err := makeCgroup(); err != nil {
			return nil, err
		}
	}
	// 5. init process in fresh namespaces
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
	cmd := &exec.Cmd{
		Path:       b.exe,
		Args:       []string{initArg0},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Dir:        "/",
		Stdout:     logf,
		Stderr:     logf,
		ExtraFiles: []*os.File{childEnd},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
				syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.uidBase, Size: uidRangeSize}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.uidBase, Size: uidRangeSize}},
			GidMappingsEnableSetgroups: true,
			// become sandbox root (host uid base) once the maps are written
			Credential: &syscall.Credential{Uid: 0, Gid: 0},
			// A session of its own: no controlling terminal of the host's
			// (the agent's threads have no seccomp filter: TIOCSTI), no
			// job-control signals from it.
			Setsid: true,
		},
	}
	if b.cfg.DieWithOwner {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if v2 {
		if fd, ok := s.cg.CgroupFD(); ok {
			cmd.SysProcAttr.UseCgroupFD = true
			cmd.SysProcAttr.CgroupFD = fd
			defer unix.Close(fd)
		}
	}
	trace(t0, "starting init")
	// The sandbox's user namespace is owned by its own host uid, not by
	// host root: see startOwned.
	err = startOwned(s.uidBase, s.uidBase, cmd.Start)
	childEnd.Close()
	logf.Close()
	if err == nil {
		err = checkOwner(cmd.Process.Pid, s.uidBase)
	}
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("create sandbox %s: start init: %w", id, err)
	}
	trace(t0, "init started")
	s.cmd = cmd
	s.initPID = cmd.Process.Pid
	s.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	if !v2 {
		if err := makeCgroup(); err != nil {
			return nil, err
		}
		if err := s.cg.AddProc(s.initPID); err != nil {
			return nil, fmt.Errorf("create sandbox %s: %w", id, err)
		}
	}
	trace(t0, "addproc")
	info := stateInfo{ID: id, OwnerPID: os.Getpid(), InitPID: s.initPID, Slot: slot, Created: time.Now().UTC()}
	ib, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(s.dir, "info.json"), ib, 0o600); err != nil {
		return nil, err
	}
	// 6. configure and wait for ready
	// RLIMIT_NPROC is a backstop above the commands' pids group (pidsSub).
	nproc := uint64(lim.Pids + agentPidsReserve)
	// Scratch places stay writable under a write scope (RestrictWrites).
	scratch := []string{"/tmp", sandboxHome, "/var/tmp", "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm"}
	writable := append([]string{"/workspace"}, scratch...)
	binds := make([]agent.Bind, len(spec.Binds))
	for i, bd := range spec.Binds {
		binds[i] = agent.Bind(bd)
	}
	init := &agent.InitConfig{
		MountDir: filepath.Join(s.dir, "disk"), DiskMounted: true, Lower: spec.RootFS, Binds: binds,
		DiskBytes: lim.DiskBytes, Inodes: lim.Inodes, TmpBytes: lim.TmpBytes, Hostname: hostname,
		NoFile: lim.NoFile, NProc: nproc, FSizeBytes: uint64(max(lim.DiskBytes, lim.TmpBytes)), Ptys: lim.Ptys,
		UID: SandboxUID, GID: SandboxUID, Home: sandboxHome, Writable: writable,
		Scratch: scratch, ScopeRoots: []string{"/workspace", sandboxHome},
		Trace:          os.Getenv("AIRLOCK_TRACE") != "",
		Network:        spec.Network != nil,
		MaxProxyConns:  spec.MaxProxyConns,
		NoFileActivity: spec.NoFileActivity,
	}
	dr := <-diskc
	diskTaken = true
	if dr.err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", id, dr.err)
	}
	disk := dr.f
	trace(t0, "disk")
	err = s.conn.Send(&agent.Message{Op: agent.OpInit, Version: agent.ProtocolVersion, Init: init}, disk)
	disk.Close()
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	trace(t0, "init configured")
	ready, err := s.recvDirect(ctx)
	trace(t0, "init ready")
	if ready != nil && ready.Timings != "" {
		rel := ready.Timings
		for _, f := range strings.Fields(ready.Timings) {
			if k, v, ok := strings.Cut(f, "@"); ok {
				if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
					rel = strings.Replace(rel, f, fmt.Sprintf("%s@+%.3fms", k, float64(ns-t0.UnixNano())/1e6), 1)
				}
			}
		}
		trace(t0, "init phases: "+rel)
	}
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: waiting for init: %w%s", id, err, s.initLog())
	}
	if ready.Op != agent.OpReady {
		return nil, fmt.Errorf("create sandbox %s: init failed: %s", id, ready.Error)
	}
	// Commands are counted and capped in a pids sub-group of their own
	// (v1: in the pids hierarchy; v2: a threaded child): the spawner thread
	// joins it, so every command starts there, while the agent's other
	// threads keep the reserve in the parent.
	{
		tid, err := hostTID(s.initPID, ready.PID)
		if err == nil {
			s.pidsSub, err = s.cg.CreatePidsSub("cmds", lim.Pids)
		}
		if err == nil {
			err = s.pidsSub.AddThread(tid)
		}
		if err != nil {
			return nil, fmt.Errorf("create sandbox %s: commands' pids group: %w", id, err)
		}
		trace(t0, "pids sub-group")
	}
	s.landlockABI = ready.LandlockABI
	s.seccomp = ready.Seccomp
	s.created = time.Now()
	s.Client = client.New(s.conn, client.Options{
		BaseEnv: append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/sandbox", "USER=sandbox", "LOGNAME=sandbox", "LANG=C.UTF-8", "TMPDIR=/tmp", "SHELL=/bin/bash"}, spec.Env...),
		Meter:   s.meter,
		Trace:   trace,
		Network: spec.Network,
		// (the agent passes connections on: only the host can count them)
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

// warmCodec: the first Create warms the agent message codec.
var warmCodec sync.Once

func (s *sandbox) initLog() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "init.log"))
	if len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return " (init log: " + strings.TrimSpace(string(b)) + ")"
}

// recvDirect reads one message before the read loop runs.
func (s *sandbox) recvDirect(ctx context.Context) (*agent.Message, error) {
	type res struct {
		m   *agent.Message
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, files, err := s.conn.Recv()
		for _, f := range files {
			f.Close()
		}
		ch <- res{m, err}
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-s.exited:
		// the message may still be queued
		select {
		case r := <-ch:
			return r.m, r.err
		case <-time.After(100 * time.Millisecond):
		}
		return nil, errors.New("init exited")
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, errors.New("timed out")
	}
}

func lockFile(path string) (*os.File, error) {
	return openLock(path, os.O_CREATE)
}

// openLock opens (creating it if flags say so) and flocks path without
// waiting.
func openLock(path string, flags int) (*os.File, error) {
	f, err := os.OpenFile(path, flags|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// allocSlot takes a free uid slot, held by an flock for the sandbox's life.
func (b *Backend) allocSlot() (int, *os.File, error) {
	var r [2]byte
	_, _ = rand.Read(r[:])
	start := (int(r[0])<<8 | int(r[1])) % maxSlots
	for i := 0; i < maxSlots; i++ {
		n := (start + i) % maxSlots
		f, err := lockFile(filepath.Join(b.slotsDir(), strconv.Itoa(n)+".lock"))
		if err == nil {
			return n, f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return 0, nil, fmt.Errorf("uid slot: %w", err)
		}
	}
	return 0, nil, fmt.Errorf("no free uid slot (%d sandboxes): %w", maxSlots, errdefs.ErrLimitExceeded)
}

// Reap removes the state, cgroups and processes of sandboxes whose owner
// process is gone. It returns the ids it reaped.
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
		// ".dead-ID": a sandbox being removed (its owner still holds the lock)
		id := strings.TrimPrefix(name, ".dead-")
		known[id] = true
		dir := filepath.Join(b.sandboxesDir(), name)
		young := true
		if st, err := os.Stat(dir); err == nil {
			young = time.Since(st.ModTime()) < 2*time.Minute
		}
		// Never create the lock: a missing one means the sandbox is being
		// created (or removed) right now, unless the dir is old.
		lock, err := openLock(filepath.Join(dir, "lock"), 0)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && !young) {
			continue // owner alive, or too young to judge
		}
		if _, err := os.Stat(filepath.Join(dir, "info.json")); err != nil && young {
			if lock != nil {
				lock.Close()
			}
			continue // still being created
		}
		unmountUnder(dir)
		if g, err := b.hier.Open(b.cfg.CgroupParent, id); err == nil {
			if err := g.Destroy(); err != nil {
				errs = append(errs, fmt.Errorf("reap %s: %w", id, err))
			}
		}
		var info stateInfo
		if ib, err := os.ReadFile(filepath.Join(dir, "info.json")); err == nil && json.Unmarshal(ib, &info) == nil && info.InitPID > 0 {
			killIfSandboxInit(info.InitPID, UIDRangeStart+info.Slot*uidRangeSize)
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
	// disk images of sandboxes whose state dir is gone (the state dir is
	// made before the image, and the image is unlinked long before the
	// state dir goes)
	diskimg.ReapImages(b.cfg.DiskDir, func(id string) bool {
		_, err := os.Stat(filepath.Join(b.sandboxesDir(), id))
		return err == nil
	})
	// cgroups whose state dir is gone: a crash between the two removals
	if names, err := b.hier.List(b.cfg.CgroupParent); err == nil {
		for _, n := range names {
			if known[n] {
				continue
			}
			// created after we listed the state dirs? (the state dir
			// always exists before the cgroup and outlives it)
			if _, err := os.Stat(filepath.Join(b.sandboxesDir(), n)); err == nil {
				continue
			}
			if _, err := os.Stat(filepath.Join(b.sandboxesDir(), ".dead-"+n)); err == nil {
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

// checkTraversable makes sure an unprivileged host uid (the sandbox's
// root) can reach dir: every ancestor needs the execute bit for others.
func checkTraversable(dir string) error {
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

// killIfSandboxInit kills pid only if it still runs as the sandbox's root
// uid, so a recycled pid is never hit.
func killIfSandboxInit(pid, uid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Uid:") {
			f := strings.Fields(line)
			if len(f) > 1 && f[1] == strconv.Itoa(uid) {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			return
		}
	}
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
