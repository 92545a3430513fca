package native

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/client"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/runtime/hostside"
)

// creation is one Create in progress: the sandbox being made, and what
// only its steps need.
type creation struct {
	b     *Backend
	s     *sandbox
	spec  runtime.Spec // checked, with its ID and hostname filled in
	v2    bool         // cgroup v2
	t0    time.Time
	disk  *hostside.PendingDisk
	ready *proto.Message // the agent's ready
}

// plan checks spec and starts the sandbox it asks for.
func (b *Backend) plan(spec runtime.Spec) (*creation, error) {
	lim, err := withDefaults(spec.Limits)
	if err != nil {
		return nil, err
	}
	// The root and the state dir go into overlayfs's option string.
	if err := hostside.CheckSpec(&spec, b.cfg.StateDir); err != nil {
		return nil, err
	}
	for _, l := range append([]string{spec.RootFS}, spec.Lowers...) {
		if err := hostside.CheckTraversable(l); err != nil {
			return nil, fmt.Errorf("root filesystem: %w", err)
		}
	}
	s := &sandbox{b: b, id: spec.ID, lim: lim, user: spec.User, dir: filepath.Join(b.lay.SandboxesDir(), spec.ID),
		host: hostside.NewBase(spec.ID, b.cfg.Logf, trace)}
	return &creation{b: b, s: s, spec: spec, v2: b.hier.Mode() == cgroups.V2, t0: time.Now()}, nil
}

// steps are a native Create. The state dir and its owner lock come
// first, before anything a reaper could see; the disk is made while the
// init starts; the cgroup comes before the init on v2 (the init is cloned
// into it), after it on v1 (where joining costs an RCU grace period that
// overlaps with the init's start).
func (c *creation) steps() []hostside.Step {
	steps := []hostside.Step{
		{Name: "state dir", Run: c.makeStateDir},
		{Name: "uid slot", Run: c.takeSlot},
		{Name: "disk", Run: c.startDisk},
	}
	if c.v2 {
		steps = append(steps, hostside.Step{Name: "cgroup", Run: c.makeCgroup}, hostside.Step{Name: "init", Run: c.startInit})
	} else {
		steps = append(steps, hostside.Step{Name: "init", Run: c.startInit}, hostside.Step{Name: "cgroup", Run: c.makeCgroup},
			hostside.Step{Name: "join cgroup", Run: c.joinCgroup})
	}
	return append(steps,
		hostside.Step{Name: "info", Run: c.writeInfo},
		hostside.Step{Name: "configure init", Run: c.configureInit},
		hostside.Step{Name: "pids sub-group", Run: c.makePidsSub},
		hostside.Step{Name: "client", Run: c.startClient},
		hostside.Step{Name: "workspace", Run: c.importWorkspace},
		hostside.Step{Name: "lifetime", Run: c.startLifetime},
	)
}

// after runs after each step: its trace, and the tests' failure hook.
func (c *creation) after(step string) error {
	trace(c.t0, step)
	if c.b.testFailAfter != nil {
		return c.b.testFailAfter(step, c.s)
	}
	return nil
}

// makeStateDir makes the state dir and takes its owner lock; from here
// on, a failure undoes the sandbox with its own teardown.
func (c *creation) makeStateDir(_ context.Context, rb *hostside.Rollback) error {
	d, err := c.b.lay.MakeStateDir(c.s.id)
	if err != nil {
		return err
	}
	c.s.host.Dir = d
	rb.Push("teardown", func() error { return c.s.Destroy(context.Background()) })
	// the disk's mount point: the init (sandbox root) moves the disk there
	return d.Mkdirs(0o755, "disk")
}

// takeSlot takes a uid range of the sandbox's own.
func (c *creation) takeSlot(context.Context, *hostside.Rollback) error {
	slot, err := hostside.TakeSlot(c.b.cfg.SlotDir)
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", c.s.id, err)
	}
	c.s.host.Slot = slot
	c.s.uidBase = slot.UIDBase()
	return nil
}

// startDisk starts making the disk, taken by configureInit.
func (c *creation) startDisk(_ context.Context, rb *hostside.Rollback) error {
	c.disk = hostside.StartDisk(c.s.makeDisk)
	rb.Push("disk", c.disk.Discard)
	return nil
}

// makeCgroup makes the sandbox's cgroup. Its pids limit leaves the agent
// a reserve above the commands' limit, which RLIMIT_NPROC (per sandbox
// uid) enforces: a fork bomb must not starve the agent of threads.
func (c *creation) makeCgroup(context.Context, *hostside.Rollback) error {
	lim := c.s.lim
	g, err := c.b.hier.Create(c.b.cfg.CgroupParent, c.s.id, cgroups.Limits{MemoryBytes: lim.MemoryBytes, Pids: lim.Pids + agentPidsReserve, CPUs: lim.CPUs})
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", c.s.id, err)
	}
	c.s.host.Cgroup = g
	return nil
}

// joinCgroup moves the init into its cgroup (v1).
func (c *creation) joinCgroup(context.Context, *hostside.Rollback) error {
	if err := c.s.host.Cgroup.AddProc(c.s.initPID); err != nil {
		return fmt.Errorf("create sandbox %s: %w", c.s.id, err)
	}
	return nil
}

// startInit starts the init in fresh namespaces, with the agent's channel.
func (c *creation) startInit(context.Context, *hostside.Rollback) error {
	s := c.s
	conn, child, err := hostside.Channel()
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", s.id, err)
	}
	s.host.Conn = conn
	defer child.Close()
	logf, err := os.OpenFile(filepath.Join(s.dir, "init.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := c.initCmd(child, logf)
	if c.v2 {
		if fd, ok := s.host.Cgroup.CgroupFD(); ok {
			cmd.SysProcAttr.UseCgroupFD = true
			cmd.SysProcAttr.CgroupFD = fd
			defer unix.Close(fd)
		}
	}
	trace(c.t0, "starting init")
	// The sandbox's user namespace is owned by its own host uid, not by
	// host root: see startOwned.
	err = startOwned(s.uidBase, s.uidBase, cmd.Start)
	if err == nil {
		err = checkOwner(cmd.Process.Pid, s.uidBase)
	}
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return fmt.Errorf("create sandbox %s: start init: %w", s.id, err)
	}
	s.cmd, s.initPID, s.exited = cmd, cmd.Process.Pid, make(chan struct{})
	go func() {
		hostside.AwaitExit(s.initPID)
		_ = cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// initCmd is the init's command: a root-owned copy of this binary as
// PID 1 of new user, mount, pid, net, ipc, uts and cgroup namespaces,
// root in them mapped to the slot's host uids.
func (c *creation) initCmd(child, logf *os.File) *exec.Cmd {
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: c.s.uidBase, Size: uidRangeSize}}
	cmd := &exec.Cmd{
		Path:       c.b.exe,
		Args:       []string{initArg0},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Dir:        "/",
		Stdout:     logf,
		Stderr:     logf,
		ExtraFiles: []*os.File{child},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
				syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
			UidMappings:                ids,
			GidMappings:                ids,
			GidMappingsEnableSetgroups: true,
			// become sandbox root (host uid base) once the maps are written
			Credential: &syscall.Credential{Uid: 0, Gid: 0},
			// A session of its own: no controlling terminal of the host's
			// (the agent's threads have no seccomp filter: TIOCSTI), no
			// job-control signals from it.
			Setsid: true,
		},
	}
	if c.b.cfg.DieWithOwner {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	return cmd
}

// writeInfo writes info.json: from now on a reaper may take the sandbox
// once its owner is gone.
func (c *creation) writeInfo(context.Context, *hostside.Rollback) error {
	return c.s.host.Dir.WriteInfo(hostside.Info{InitPID: c.s.initPID, Slot: c.s.host.Slot.N})
}

// configureInit sends the init its configuration and the disk, and waits
// for the agent's ready.
func (c *creation) configureInit(ctx context.Context, _ *hostside.Rollback) error {
	s := c.s
	disk, err := c.disk.Take(s.host)
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", s.id, err)
	}
	trace(c.t0, "disk")
	err = s.host.Conn.Send(&proto.Message{Op: proto.OpInit, Version: proto.ProtocolVersion, Init: c.initConfig()}, disk)
	s.host.KeepMount(disk)
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", s.id, err)
	}
	trace(c.t0, "init configured")
	ready, err := hostside.AwaitReady(ctx, s.host.Conn, s.exited, "init", 30*time.Second)
	trace(c.t0, "init ready")
	if ready != nil && ready.Timings != "" {
		trace(c.t0, "init phases: "+hostside.Timings(c.t0, ready.Timings))
	}
	if err != nil {
		return fmt.Errorf("create sandbox %s: waiting for init: %w%s", s.id, err, s.initLog())
	}
	if ready.Op != proto.OpReady {
		return fmt.Errorf("create sandbox %s: init failed: %s", s.id, ready.Error)
	}
	s.host.KeepWatch(ready)
	c.ready = ready
	return nil
}

// initConfig is what the init sets up: mounts, limits, the command user
// and the hardening of the spawner thread.
func (c *creation) initConfig() *proto.InitConfig {
	spec, lim := c.spec, c.s.lim
	// Scratch places stay writable under a write scope (RestrictWrites).
	home := spec.User.Home
	scratch := []string{"/tmp", home, "/var/tmp", "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm"}
	binds := make([]proto.Bind, len(spec.Binds))
	for i, bd := range spec.Binds {
		binds[i] = proto.Bind(bd)
	}
	return &proto.InitConfig{
		MountDir: filepath.Join(c.s.dir, "disk"), DiskMounted: true, Lower: spec.RootFS, Lowers: spec.Lowers, Binds: binds,
		DiskBytes: lim.DiskBytes, Inodes: lim.Inodes, TmpBytes: lim.TmpBytes, Hostname: spec.Hostname,
		// RLIMIT_NPROC is a backstop above the commands' pids group (pidsSub).
		NoFile: lim.NoFile, NProc: uint64(lim.Pids + agentPidsReserve), FSizeBytes: uint64(max(lim.DiskBytes, lim.TmpBytes)), Ptys: lim.Ptys,
		UID: SandboxUID, GID: SandboxUID, Home: home, UserName: userName(spec.User), Writable: append([]string{"/workspace"}, scratch...),
		Scratch: scratch, ScopeRoots: []string{"/workspace", home},
		Trace:          os.Getenv("AIRLOCK_TRACE") != "",
		Network:        spec.Network != nil,
		MaxProxyConns:  spec.MaxProxyConns,
		NoFileActivity: spec.NoFileActivity,
	}
}

// userName is InitConfig.UserName for u: "" when the template's passwd
// already says it.
func userName(u runtime.User) string {
	if u.IsDefault() {
		return ""
	}
	return u.Name
}

// makePidsSub puts the commands in a pids sub-group of their own (v1: in
// the pids hierarchy; v2: a threaded child), counted and capped there:
// the spawner thread joins it, so every command starts there, while the
// agent's other threads keep the reserve in the parent.
func (c *creation) makePidsSub(context.Context, *hostside.Rollback) error {
	s := c.s
	tid, err := hostTID(s.initPID, c.ready.PID)
	if err == nil {
		s.pidsSub, err = s.host.Cgroup.CreatePidsSub("cmds", s.lim.Pids)
	}
	if err == nil {
		err = s.pidsSub.AddThread(tid)
	}
	if err != nil {
		return fmt.Errorf("create sandbox %s: commands' pids group: %w", s.id, err)
	}
	return nil
}

// startClient starts the host's end of the agent protocol; the sandbox
// is done when its init or its channel is.
func (c *creation) startClient(context.Context, *hostside.Rollback) error {
	s := c.s
	s.landlockABI = c.ready.LandlockABI
	s.seccomp = c.ready.Seccomp
	s.created = time.Now()
	s.Client = client.New(s.host.Conn, client.Options{
		BaseEnv: append(append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, c.spec.User.Env()...), append([]string{"LANG=C.UTF-8", "TMPDIR=/tmp", "SHELL=/bin/bash"}, c.spec.Env...)...),
		Meter:   s.meter,
		Trace:   trace,
		Network: c.spec.Network,
		// (the agent passes connections on: only the host can count them)
		MaxProxyConns: c.spec.MaxProxyConns,
	})
	go func() {
		select {
		case <-s.exited:
		case <-s.Client.Done():
		}
		s.host.MarkDone()
	}()
	return nil
}

// importWorkspace copies the spec's workspace into /workspace.
func (c *creation) importWorkspace(ctx context.Context, _ *hostside.Rollback) error {
	if c.spec.Workspace == "" {
		return nil
	}
	if err := c.s.ImportDir(ctx, c.spec.Workspace, "/workspace"); err != nil {
		return fmt.Errorf("create sandbox %s: copy workspace: %w", c.s.id, err)
	}
	return nil
}

// startLifetime destroys the sandbox once its lifetime has passed.
func (c *creation) startLifetime(context.Context, *hostside.Rollback) error {
	if d := c.s.lim.Lifetime; d > 0 {
		c.s.host.StartLifetime(d, func() { _ = c.s.Destroy(context.Background()) })
	}
	return nil
}
