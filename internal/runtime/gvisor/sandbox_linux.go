package gvisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
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

// ErrStopped is returned for operations on a sandbox that has stopped.
var ErrStopped = client.ErrStopped

type sandbox struct {
	// Client is the agent's channel once the sandbox is ready: Exec, the
	// file operations.
	*client.Client

	b       *Backend
	id      string
	dir     string
	lim     runtime.Limits
	user    runtime.User // the command user's name and home
	created time.Time
	seccomp string

	// host is what the sandbox holds on the host (state dir and lock,
	// cgroup, channel, lifetime, freezer) and its teardown.
	host   *hostside.Base
	cmd    *exec.Cmd
	exited chan struct{} // closed when runsc has exited
}

func (s *sandbox) ID() string             { return s.id }
func (s *sandbox) Done() <-chan struct{}  { return s.host.Done() }
func (s *sandbox) Cgroup() *cgroups.Group { return s.host.Cgroup }

// Info implements runtime.Sandbox.
func (s *sandbox) Info() runtime.Info {
	lim := s.lim
	return runtime.Info{
		ID: s.id, Backend: "gvisor", Created: s.created, Limits: lim, User: s.user,
		Isolation: runtime.Isolation{
			Boundary: fmt.Sprintf("gVisor user-space kernel (runsc %s, %s platform) + seccomp", s.b.version, s.b.platform),
			// gVisor's own: every sandbox has all of these in its kernel,
			// and runsc runs that kernel in host namespaces of its own.
			Namespaces: []string{"mount", "pid", "net", "ipc", "uts"},
			Seccomp:    s.seccomp + " (in gVisor) + gVisor's host syscall filter",
			Cgroup:     hostside.CgroupMode(s.b.hier),
		},
	}
}

// launch starts runsc in a mount namespace of its own, in which the
// sandbox's root is assembled: the disk attached on dir/disk and an
// overlay of the template (lower) and the disk (upper) on dir/rootfs. The
// host's mount table never holds any of it; the mounts go away with the
// last runsc process. The namespace is made on a locked OS thread that
// forks runsc, waits for it and then dies with the goroutine, so that no
// other goroutine ever runs in that namespace. It also joins the cgroup
// first (v1: per thread), so runsc starts inside it.
func (s *sandbox) launch(cmd *exec.Cmd, disk *os.File, lower string, binds []bindMount) error {
	started := make(chan error, 1)
	go s.runLocked(cmd, disk, lower, binds, started)
	return <-started
}

// runLocked is launch's goroutine: on its locked OS thread (never
// unlocked: the thread's mount namespace is the sandbox's) it makes the
// namespace and the root, joins the cgroup, starts runsc, says so on
// started, and waits for runsc.
func (s *sandbox) runLocked(cmd *exec.Cmd, disk *os.File, lower string, binds []bindMount, started chan<- error) {
	goruntime.LockOSThread()
	defer close(s.exited)
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		started <- fmt.Errorf("mount namespace: %w", err)
		return
	}
	if err := s.buildRoot(disk, lower, binds); err != nil {
		started <- err
		return
	}
	leave, done, err := s.joinCgroup(cmd)
	if err != nil {
		started <- err
		return
	}
	defer done()
	if err := startRunsc(cmd, leave); err != nil {
		started <- err
		return
	}
	s.cmd = cmd
	started <- nil
	_ = cmd.Wait()
}

// joinCgroup makes runsc start in the sandbox's cgroup. v2: cmd is
// forked into it by descriptor (done closes it). v1: this thread joins
// the group so that runsc is forked into it, and leave takes it back at
// once: a thread of ours in the group would die with the sandbox.
func (s *sandbox) joinCgroup(cmd *exec.Cmd) (leave func() error, done func(), err error) {
	done = func() {}
	if s.host.Cgroup.Mode() == cgroups.V2 {
		if fd, ok := s.host.Cgroup.CgroupFD(); ok {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
			done = func() { unix.Close(fd) }
		}
		return nil, done, nil
	}
	back, err := threadGroupsV1(s.host.Cgroup)
	if err != nil {
		return nil, nil, err
	}
	tid := strconv.Itoa(unix.Gettid())
	for _, d := range s.host.Cgroup.Paths() {
		if err := os.WriteFile(filepath.Join(d, "tasks"), []byte(tid), 0); err != nil {
			return nil, nil, fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	leave = func() error {
		for _, f := range back {
			if err := os.WriteFile(f, []byte(tid), 0); err != nil {
				return fmt.Errorf("leave the sandbox's cgroup (%s): %w", f, err)
			}
		}
		return nil
	}
	return leave, done, nil
}

// startRunsc starts runsc, then (v1) leaves the sandbox's cgroup. A
// thread of ours must never stay in the sandbox's group (destroying it
// kills every member): when leaving fails, runsc is ended and the error
// returned, so that this thread dies, locked, right away.
func startRunsc(cmd *exec.Cmd, leave func() error) error {
	err := cmd.Start()
	if leave != nil {
		if lerr := leave(); lerr != nil {
			if err == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			return lerr
		}
	}
	if err != nil {
		return fmt.Errorf("start runsc: %w", err)
	}
	return nil
}

// threadGroupsV1 returns, for each v1 hierarchy of g, the tasks file of
// the group the calling thread is in now.
func threadGroupsV1(g *cgroups.Group) ([]string, error) {
	b, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range g.Paths() {
		mount := strings.TrimSuffix(d, "/"+g.Parent()+"/"+g.Name())
		want := strings.Split(filepath.Base(mount), ",")
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 {
				continue
			}
			have := strings.Split(f[1], ",")
			all := len(f[1]) > 0
			for _, w := range want {
				all = all && slices.Contains(have, w) || all && slices.Contains(have, "name="+w)
			}
			if all {
				out = append(out, filepath.Join(mount, f[2], "tasks"))
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("cgroup of this thread in %s not found", mount)
		}
	}
	return out, nil
}

// buildRoot runs on the launch thread, in its new mount namespace.
func (s *sandbox) buildRoot(disk *os.File, lower string, binds []bindMount) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	d := filepath.Join(s.dir, "disk")
	if err := unix.MoveMount(int(disk.Fd()), "", unix.AT_FDCWD, d, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach disk: %w", err)
	}
	_ = os.Remove(filepath.Join(d, "lost+found"))
	upper, work := filepath.Join(d, "upper"), filepath.Join(d, "work")
	for _, p := range []string{upper, work} {
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	// Writable directories live in the upper layer from the start, owned
	// by the command user; mount points of the binds exist there too.
	for _, w := range []struct {
		path string
		mode os.FileMode
		user bool
	}{{"workspace", 0o755, true}, {"home", 0o755, false}, {strings.TrimPrefix(s.user.Home, "/"), 0o700, true}, {"var", 0o755, false}, {"var/tmp", 0o1777, false}, {"tmp", 0o1777, false}, {".airlock", 0o755, false}} {
		p := filepath.Join(upper, w.path)
		if err := os.Mkdir(p, w.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, w.mode); err != nil {
			return err
		}
		if w.user {
			if err := os.Chown(p, SandboxUID, SandboxUID); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(upper, agentPath), nil, 0o555); err != nil {
		return err
	}
	// The command user called otherwise: its passwd and group lines.
	if !s.user.IsDefault() {
		if err := hostside.WriteUserFiles(upper, strings.Split(lower, ":"), SandboxUID, SandboxUID, s.user); err != nil {
			return err
		}
	}
	root := filepath.Join(s.dir, "rootfs")
	ovl := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if err := unix.Mount("airlock-root", root, "overlay", unix.MS_NOSUID|unix.MS_NODEV, ovl); err != nil {
		return fmt.Errorf("mount overlay root: %w", err)
	}
	for _, b := range binds {
		if err := mountPoint(root, b); err != nil {
			return fmt.Errorf("bind mount point %s: %w", b.target, err)
		}
	}
	return nil
}

// mountPoint makes sure a bind's mount point is there, of its source's
// kind: a directory (the template's /usr) or a file (a sandbox's trust
// bundle over the template's, sandboxnet).
//
// The root is the template's (an image's layers, hostile), so the walk
// stays inside it (os.Root): a symlink on the way that leads out, which
// the host would follow to make its directories and file outside, is an
// error instead.
func mountPoint(root string, b bindMount) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	p := strings.TrimPrefix(filepath.Clean("/"+b.target), "/")
	src, err := os.Stat(b.source)
	if err != nil {
		return err
	}
	if src.IsDir() {
		if err := r.MkdirAll(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		return nil
	}
	if fi, err := r.Lstat(p); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("a file's bind needs a regular file there, not %v", fi.Mode().Type())
		}
		return nil
	}
	if err := r.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return r.WriteFile(p, nil, 0o644)
}

// initLog is the end of runsc's log, for an error message.
func (s *sandbox) initLog() string {
	return hostside.LogTail(filepath.Join(s.dir, "init.log"), "runsc log")
}

// meter: the host sees gVisor only from outside, through its cgroup. A
// memory limit hit is the host OOM-killing gVisor's kernel, which ends
// the whole sandbox; a process limit hit (RLIMIT_NPROC, enforced by
// gVisor's kernel) leaves no host-side trace and is not named.
func (s *sandbox) meter() func(*proto.ExitInfo) runtime.Limit {
	before, _ := s.host.Cgroup.LimitHits()
	return func(ei *proto.ExitInfo) runtime.Limit {
		if ei == nil {
			// the sandbox died under the command: wait for gVisor to be
			// gone, so that the kill is counted
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
			}
		}
		after, _ := s.host.Cgroup.LimitHits()
		if after.OOMKills > before.OOMKills {
			return runtime.LimitMemory
		}
		if ei != nil && ei.Code != 0 && s.diskFull() {
			return runtime.LimitDisk
		}
		return runtime.LimitNone
	}
}

// diskFull looks at the sandbox's disk from the host (diskStatfs): full
// is under 1 MiB or 1% free, or no inode left.
func (s *sandbox) diskFull() bool {
	st, err := s.diskStatfs()
	if err != nil {
		return false
	}
	free := st.Bavail * uint64(st.Bsize)
	return free < 1<<20 || free*100 < st.Blocks*uint64(st.Bsize) || (st.Files > 0 && st.Ffree == 0)
}

// diskStatfs is statfs of the sandbox's disk from the host, through the
// mount namespace runsc runs in: a current gVisor reports no real numbers
// inside (by default it lays an overlay of its own over the root), and
// the host's statfs costs no round trip through gVisor's kernel (4 µs
// against the agent's 1.8 ms, measured on runsc 20221219).
func (s *sandbox) diskStatfs() (unix.Statfs_t, error) {
	var st unix.Statfs_t
	if s.cmd == nil || s.cmd.Process == nil {
		return st, fmt.Errorf("sandbox %s: runsc is not running: %w", s.id, ErrStopped)
	}
	p := fmt.Sprintf("/proc/%d/root%s", s.cmd.Process.Pid, filepath.Join(s.dir, "disk"))
	if err := unix.Statfs(p, &st); err != nil {
		return st, fmt.Errorf("sandbox %s: statfs of its disk: %w", s.id, err)
	}
	if st.Type != unix.EXT4_SUPER_MAGIC {
		// runsc gone and its pid reused: not the disk
		return st, fmt.Errorf("sandbox %s: its disk is not mounted where runsc runs (filesystem %#x): %w", s.id, st.Type, ErrStopped)
	}
	return st, nil
}

// DiskUsage implements runtime.DiskMeter from the host (diskStatfs):
// the disk that holds /workspace and the home, as a command's statfs
// would see it were gVisor to pass it through.
func (s *sandbox) DiskUsage(ctx context.Context) (runtime.DiskUsage, error) {
	select {
	case <-s.exited:
		return runtime.DiskUsage{}, fmt.Errorf("sandbox %s: %w", s.id, ErrStopped)
	default:
	}
	st, err := s.diskStatfs()
	if err != nil {
		return runtime.DiskUsage{}, err
	}
	return client.DiskUsageOf(proto.StatfsOf(&st))
}

// Destroy implements runtime.Sandbox: the teardown of package hostside,
// whose stage 3 is stopRunsc.
func (s *sandbox) Destroy(ctx context.Context) error {
	return s.host.Destroy(s.stopRunsc)
}

// stopRunsc kills every process of the sandbox (runsc, the gofer,
// gVisor's kernel: all in the group) at once, then waits for runsc.
func (s *sandbox) stopRunsc() error {
	var errs []error
	if g := s.host.Cgroup; g != nil {
		if pids, _ := g.Procs(); slices.Contains(pids, os.Getpid()) {
			// cannot happen (launch leaves the group at once); never
			// kill ourselves
			errs = append(errs, fmt.Errorf("sandbox %s: this process is in the sandbox's cgroup; not killing the group", s.id))
		} else if err := g.Kill(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("sandbox %s: runsc did not exit", s.id))
		}
	}
	return errors.Join(errs...)
}

var _ runtime.Pauser = (*sandbox)(nil)
var _ runtime.Sweeper = (*sandbox)(nil)

// Pause freezes the whole sandbox (runsc, the gofer and gVisor's kernel)
// with its cgroup's freezer. On cgroup v1 that freezer holds back even
// runsc's parent-death SIGKILL, so a sandbox that dies with its owner gets
// a thaw guard while it is paused (package thawguard).
func (s *sandbox) Pause(ctx context.Context) error {
	return s.host.Pause(s.b.agentBin, s.b.cfg.DieWithOwner)
}

// Resume thaws a paused sandbox.
func (s *sandbox) Resume(ctx context.Context) error { return s.host.Resume() }

// RestrictWrites implements runtime.WriteScoper: gVisor has no Landlock,
// which enforces write scopes, so it is refused, never a silent no-op.
func (s *sandbox) RestrictWrites(ctx context.Context, paths []string) (runtime.ScopeInfo, error) {
	return runtime.ScopeInfo{}, fmt.Errorf("restrict writes: gVisor has no Landlock, which enforces write scopes: use the native backend: %w", errdefs.ErrUnsupported)
}

// trace prints phase timings to stderr when AIRLOCK_TRACE is set.
func trace(start time.Time, what string) { hostside.Trace("gvisor", start, what) }

// Usage implements runtime.Meter: the container's cgroup, which also
// counts gVisor's own kernel (its memory reserve included). Its page
// cache is not the sandbox's: gVisor keeps the commands' memory and its
// own cache of their files in one memory file, which the host counts as
// shared memory, page cache to it; and what the host caches of the disk
// is the gofer's. The figure is UnknownBytes rather than either.
func (s *sandbox) Usage() (runtime.Usage, error) {
	u, err := s.host.Usage()
	u.PageCacheBytes = runtime.UnknownBytes
	return u, err
}
