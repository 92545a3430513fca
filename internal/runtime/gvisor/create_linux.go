package gvisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
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
	binds []bindMount
	t0    time.Time
	disk  *hostside.PendingDisk
}

// plan checks spec and starts the sandbox it asks for.
func (b *Backend) plan(spec runtime.Spec) (*creation, error) {
	lim, err := withDefaults(spec.Limits)
	if err != nil {
		return nil, err
	}
	// The root and the state dir go into the overlay's option string
	// (buildRoot).
	if err := hostside.CheckSpec(&spec, b.cfg.StateDir); err != nil {
		return nil, err
	}
	if len(spec.Lowers) > 0 && b.agentLoader != "" && !b.testTrustImageLoader {
		return nil, fmt.Errorf("gvisor: this airlock binary is dynamically linked (built with cgo, loader %s), and gVisor loads the agent from the sandbox's root: an image template's root would supply the loader and run its code as the agent; build airlock static (CGO_ENABLED=0, as make build does): %w", b.agentLoader, errdefs.ErrUnsupported)
	}
	c := &creation{b: b, spec: spec, t0: time.Now()}
	for _, bd := range spec.Binds {
		c.binds = append(c.binds, bindMount{source: bd.Source, target: bd.Target})
	}
	c.s = &sandbox{b: b, id: spec.ID, lim: lim, user: spec.User, dir: filepath.Join(b.lay.SandboxesDir(), spec.ID),
		exited: make(chan struct{}), host: hostside.NewBase(spec.ID, b.cfg.Logf, trace)}
	return c, nil
}

// steps are a gVisor Create. The state dir and its owner lock come first,
// before anything a reaper could see; the disk is made while the cgroup
// and the bundle are.
func (c *creation) steps() []hostside.Step {
	return []hostside.Step{
		{Name: "state dir", Run: c.makeStateDir},
		{Name: "disk", Run: c.startDisk},
		{Name: "cgroup", Run: c.makeCgroup},
		{Name: "bundle", Run: c.writeBundle},
		{Name: "runsc", Run: c.startRunsc},
		{Name: "configure agent", Run: c.configureAgent},
		{Name: "client", Run: c.startClient},
		{Name: "workspace", Run: c.importWorkspace},
		{Name: "lifetime", Run: c.startLifetime},
	}
}

// after runs after each step: its trace, and the tests' failure hook.
func (c *creation) after(step string) error {
	trace(c.t0, step)
	if c.b.testFailAfter != nil {
		return c.b.testFailAfter(step, c.s)
	}
	return nil
}

// makeStateDir makes the state dir, takes its owner lock and writes
// info.json; from here on, a failure undoes the sandbox with its own
// teardown.
func (c *creation) makeStateDir(_ context.Context, rb *hostside.Rollback) error {
	d, err := c.b.lay.MakeStateDir(c.s.id)
	if err != nil {
		return err
	}
	c.s.host.Dir = d
	rb.Push("teardown", func() error { return c.s.Destroy(context.Background()) })
	if err := d.Mkdirs(0o700, "disk", "rootfs", "runsc"); err != nil {
		return err
	}
	return d.WriteInfo(hostside.Info{})
}

// startDisk starts making the disk, taken by startRunsc.
func (c *creation) startDisk(_ context.Context, rb *hostside.Rollback) error {
	lim := c.s.lim
	c.disk = hostside.StartDisk(func() (hostside.Disk, error) { return c.b.lay.MountDisk(c.s.id, lim.DiskBytes, lim.Inodes) })
	rb.Push("disk", c.disk.Discard)
	return nil
}

// makeCgroup makes the cgroup the whole sandbox (runsc, the gofer,
// gVisor's kernel and every process in it) lives in.
func (c *creation) makeCgroup(context.Context, *hostside.Rollback) error {
	lim := c.s.lim
	g, err := c.b.hier.Create(c.b.cfg.CgroupParent, c.s.id, cgroups.Limits{MemoryBytes: lim.MemoryBytes + gvisorReserve, Pids: hostThreadsBase + hostThreadsPerPid*lim.Pids, CPUs: lim.CPUs})
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", c.s.id, err)
	}
	c.s.host.Cgroup = g
	return nil
}

// writeBundle writes the OCI bundle (config.json), with the masks that
// hide the host's configuration under a bound /usr.
func (c *creation) writeBundle(context.Context, *hostside.Rollback) error {
	s, lim := c.s, c.s.lim
	empty := filepath.Join(s.dir, "empty")
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		return err
	}
	for i, bd := range c.binds {
		if path.Clean(bd.target) == "/usr" {
			masks, err := usrMasks(bd.source, bd.target, empty, filepath.Join(s.dir, "usr-kept"))
			if err != nil {
				return fmt.Errorf("create sandbox %s: hide host configuration: %w", s.id, err)
			}
			c.binds[i].masks = masks
		}
	}
	bundle := bundleSpec(filepath.Join(s.dir, "rootfs"), c.spec.Hostname, c.b.agentBin, c.binds,
		rlimits{nofile: lim.NoFile, nproc: uint64(lim.Pids), fsize: uint64(lim.DiskBytes)})
	if err := writeBundle(s.dir, bundle); err != nil {
		return fmt.Errorf("create sandbox %s: bundle: %w", s.id, err)
	}
	return nil
}

// startRunsc starts runsc on the bundle, in a mount namespace of its own
// that holds the root (launch), with the agent's channel as its stdin.
func (c *creation) startRunsc(context.Context, *hostside.Rollback) error {
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
	args := []string{"--root", filepath.Join(s.dir, "runsc"), "--network=none", "--ignore-cgroups", "--platform=" + c.b.platform, "run", "--bundle", s.dir, s.id}
	cmd := exec.Command(c.b.runsc, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = child, logf, logf
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = &unix.SysProcAttr{}
	if c.b.cfg.DieWithOwner {
		cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
	}
	disk, err := c.disk.Take(s.host)
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", s.id, err)
	}
	trace(c.t0, "disk")
	// An image's layers below its top (top first), as overlayfs lists them.
	err = s.launch(cmd, disk, strings.Join(append([]string{c.spec.RootFS}, c.spec.Lowers...), ":"), c.binds)
	disk.Close()
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w%s", s.id, err, s.initLog())
	}
	return nil
}

// configureAgent sends the agent its configuration and waits for its
// ready.
func (c *creation) configureAgent(ctx context.Context, _ *hostside.Rollback) error {
	s, spec := c.s, c.spec
	home := spec.User.Home
	scratch := []string{"/tmp", home, "/var/tmp", "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm"}
	init := &proto.InitConfig{
		Hostname: spec.Hostname, UID: SandboxUID, GID: SandboxUID, Home: home,
		Writable: append([]string{"/workspace"}, scratch...), Scratch: scratch,
		ScopeRoots: []string{"/workspace", home}, Trace: os.Getenv("AIRLOCK_TRACE") != "",
		Network: spec.Network != nil, NoFileActivity: spec.NoFileActivity, MaxProxyConns: spec.MaxProxyConns,
	}
	if err := s.host.Conn.Send(&proto.Message{Op: proto.OpInit, Version: proto.ProtocolVersion, Init: init}); err != nil {
		return fmt.Errorf("create sandbox %s: %w", s.id, err)
	}
	ready, err := hostside.AwaitReady(ctx, s.host.Conn, s.exited, "runsc", 60*time.Second)
	trace(c.t0, "agent ready")
	if ready != nil && ready.Timings != "" {
		trace(c.t0, "agent phases: "+hostside.Timings(c.t0, ready.Timings))
	}
	if err != nil {
		return fmt.Errorf("create sandbox %s: waiting for the agent: %w%s", s.id, err, s.initLog())
	}
	if ready.Op != proto.OpReady {
		return fmt.Errorf("create sandbox %s: agent failed: %s%s", s.id, ready.Error, s.initLog())
	}
	s.host.KeepWatch(ready) // (gVisor passes none from inside: nothing kept)
	s.seccomp = ready.Seccomp
	return nil
}

// startClient starts the host's end of the agent protocol, relaying
// terminals and network connections (gVisor refuses descriptors sent
// from inside); the sandbox is done when runsc or the channel is.
func (c *creation) startClient(context.Context, *hostside.Rollback) error {
	s := c.s
	s.created = time.Now()
	s.Client = client.New(s.host.Conn, client.Options{
		BaseEnv:  append(append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, c.spec.User.Env()...), append([]string{"LANG=C.UTF-8", "TMPDIR=/tmp", "SHELL=/bin/bash"}, c.spec.Env...)...),
		Meter:    s.meter,
		RelayTTY: true,
		Network:  c.spec.Network,
		RelayNet: true,
		Trace:    trace,
		// the agent relays and caps too: what it holds is bounded by it
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
