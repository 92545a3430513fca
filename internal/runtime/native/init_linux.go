package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/seccomp"
	"github.com/airlock-dev/airlock/internal/kernel/thawguard"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/runtime/agent/watch"
	"github.com/airlock-dev/airlock/internal/runtime/hostside"
)

// mainAt is when the sandbox init's main began, waitAt when it began to
// wait for its configuration (for AIRLOCK_TRACE).
var mainAt, waitAt time.Time

// initArg0 marks a re-executed airlock binary as a sandbox init.
const initArg0 = "airlock-sandbox-init"

// MaybeInit turns this process into a sandbox's PID 1 (or a paused
// sandbox's thaw guard) when it was started as one; otherwise it returns
// at once. Call it first thing in main (and in
// TestMain of packages that create native sandboxes).
func MaybeInit() {
	thawguard.MaybeRun() // a paused sandbox's guard: does not return
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	mainAt = time.Now()
	// Built while the host sends the configuration, not after it: the
	// message codec (for the ready message) and the commands' seccomp
	// program (for NewServer).
	go func() {
		proto.WarmCodec()
		_, _ = seccomp.Program()
	}()
	// Whatever the host process leaked to us (descriptors it opened without
	// O_CLOEXEC) must never reach a command: mark every descriptor above
	// the channel close-on-exec. (The Go runtime's own are already.)
	// Those without FD_CLOEXEC came from the host: close them outright, so
	// the agent does not hold them either.
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd <= 3 {
				continue
			}
			if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
				unix.Close(fd)
			}
		}
	}
	if err := unix.CloseRange(4, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		os.Exit(1)
	}
	conn := proto.NewConn(os.NewFile(3, "agent-channel"))
	unix.CloseOnExec(3)
	// runInit only returns on failure: serving ends with the process.
	err := runInit(conn)
	_ = conn.Send(&proto.Message{Op: proto.OpError, Code: "internal", Error: err.Error()})
	os.Exit(1)
}

// runInit sets the sandbox up from the init message, in steps (the
// root, the system, the agent), says ready, then serves.
func runInit(conn *proto.Conn) error {
	waitAt = time.Now()
	cfg, disk, err := recvInit(conn)
	if err != nil {
		return err
	}
	tr := newInitTrace(cfg.Trace)
	err = setupRoot(cfg, disk)
	if disk != nil {
		disk.Close()
	}
	if err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	tr.mark("root")
	if err := setupSystem(cfg); err != nil {
		return err
	}
	tr.mark("net+rlimits")
	srv, err := startAgent(conn, cfg, tr)
	if err != nil {
		return err
	}
	if cfg.Trace {
		tr.timings = append(tr.timings, fmt.Sprintf("send@%d", time.Now().UnixNano()))
	}
	var pass []*os.File // see Server.WatchFile
	if f := srv.WatchFile(); f != nil {
		pass = append(pass, f)
	}
	if err := conn.Send(&proto.Message{Op: proto.OpReady, Version: proto.ProtocolVersion, PID: srv.SpawnerTID(), LandlockABI: srv.LandlockABI(), Seccomp: "default-deny allowlist", Timings: strings.Join(tr.timings, " ")}, pass...); err != nil {
		return err
	}
	srv.Serve()
	return errors.New("sandbox init: agent stopped serving")
}

// recvInit reads the init message and the disk's mount descriptor (when
// the host mounted the disk; other descriptors are closed).
func recvInit(conn *proto.Conn) (*proto.InitConfig, *os.File, error) {
	m, files, err := conn.Recv()
	if err != nil {
		return nil, nil, err
	}
	if m.Op != proto.OpInit || m.Init == nil {
		return nil, nil, fmt.Errorf("sandbox init: expected init message, got %q", m.Op)
	}
	if m.Init.DiskMounted {
		if len(files) != 1 {
			return nil, nil, fmt.Errorf("sandbox init: expected the disk's mount descriptor, got %d descriptors", len(files))
		}
		return m.Init, files[0], nil
	}
	for _, f := range files {
		f.Close()
	}
	return m.Init, nil, nil
}

// initTrace collects the init's timings for a traced create (nothing
// otherwise).
type initTrace struct {
	on      bool
	t0      time.Time
	timings []string
}

func newInitTrace(on bool) *initTrace {
	tr := &initTrace{on: on, t0: time.Now()}
	if on {
		tr.timings = append(tr.timings, fmt.Sprintf("main@%d", mainAt.UnixNano()), fmt.Sprintf("wait@%d", waitAt.UnixNano()), fmt.Sprintf("recv@%d", tr.t0.UnixNano()))
	}
	return tr
}

func (tr *initTrace) mark(what string) {
	if tr.on {
		tr.timings = append(tr.timings, fmt.Sprintf("%s=%.3fms", what, float64(time.Since(tr.t0).Microseconds())/1000))
	}
}

// setupSystem sets the hostname, brings loopback up, sets the rlimits
// and makes the agent undumpable (sandbox processes cannot open
// /proc/1/*).
func setupSystem(cfg *proto.InitConfig) error {
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fmt.Errorf("sandbox init: hostname: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("sandbox init: loopback: %w", err)
	}
	if err := setRlimits(cfg); err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if err := agent.SetComm(); err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	return nil
}

// startAgent makes the agent's server (hardening), its file activity
// watch and its network listeners.
func startAgent(conn *proto.Conn, cfg *proto.InitConfig, tr *initTrace) (*agent.Server, error) {
	srv, err := agent.NewServer(conn, agent.Hardening{UID: cfg.UID, GID: cfg.GID, Writable: cfg.Writable, Scratch: cfg.Scratch, ScopeRoots: cfg.ScopeRoots, RequireLandlock: cfg.RequireLock})
	if err != nil {
		return nil, fmt.Errorf("sandbox init: %w", err)
	}
	srv.DiskPaths = []string{"/", "/tmp"}
	tr.mark("agent")
	// What each command does to the command user's files; git's object
	// reads are left out. Without inotify (out of instances) the reports
	// say incomplete.
	if !cfg.NoFileActivity {
		if err := srv.WatchFiles([]string{"/workspace", cfg.Home}, []string{"/workspace/.git"}); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox init: file activity: %v\n", err)
		}
	}
	tr.mark("watch")
	if cfg.Network {
		if err := srv.StartNetwork(false, cfg.MaxProxyConns); err != nil {
			return nil, fmt.Errorf("sandbox init: %w", err)
		}
	}
	return srv, nil
}

func mountErr(what, target string, err error) error {
	return fmt.Errorf("mount %s on %s: %w", what, target, err)
}

// setupRoot builds the sandbox root in this (new) mount namespace and
// pivots into it. The layout:
//
//	MountDir            the sandbox's private disk (ext4 on a loop device, or a tmpfs)
//	MountDir/upper      overlay upper; /workspace and the home pre-made here
//	                    (and /etc/passwd, /etc/group when the user is renamed)
//	MountDir/root       overlay(lower=template, upper) -> becomes /
func setupRoot(cfg *proto.InitConfig, disk *os.File) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return mountErr("private propagation", "/", err)
	}
	d := cfg.MountDir
	upper, work, root := filepath.Join(d, "upper"), filepath.Join(d, "work"), filepath.Join(d, "root")
	if err := mountDisk(cfg, disk, upper, work, root); err != nil {
		return err
	}
	if err := makeWritable(cfg, upper); err != nil {
		return err
	}
	if err := mountOverlay(root, append([]string{cfg.Lower}, cfg.Lowers...), upper, work); err != nil {
		return err
	}
	if err := bindTemplate(root, cfg.Binds); err != nil {
		return err
	}
	if err := setupProc(root); err != nil {
		return err
	}
	if err := setupDev(root, cfg.Ptys); err != nil {
		return err
	}
	tmp := filepath.Join(root, "tmp")
	if err := unix.Mount("airlock-tmp", tmp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,nr_inodes=%d,mode=1777", cfg.TmpBytes, max(cfg.Inodes, 1024))); err != nil {
		return mountErr("tmpfs", tmp, err)
	}
	// /sys stays an empty read-only directory: nothing of the host's.
	return pivot(root)
}

// mountDisk puts the sandbox's disk on MountDir: the host's mounted disk
// moved there, or (none) a tmpfs with the layers' directories made.
func mountDisk(cfg *proto.InitConfig, disk *os.File, upper, work, root string) error {
	d := cfg.MountDir
	if disk != nil {
		if err := unix.MoveMount(int(disk.Fd()), "", unix.AT_FDCWD, d, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return mountErr("disk", d, err)
		}
		return nil
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", cfg.DiskBytes, cfg.Inodes)
	if err := unix.Mount("airlock-disk", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return mountErr("tmpfs", d, err)
	}
	for _, p := range []string{upper, work, root} {
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// makeWritable makes the writable directories in the upper layer from
// the start, owned by the command user, so no copy-up of template
// (host-owned) dirs is needed; and, for a renamed command user, its
// passwd and group.
func makeWritable(cfg *proto.InitConfig, upper string) error {
	for _, w := range []struct {
		path string
		mode os.FileMode
		user bool
	}{{"workspace", 0o755, true}, {"home", 0o755, false}, {strings.TrimPrefix(cfg.Home, "/"), 0o700, true}, {"var", 0o755, false}, {"var/tmp", 0o1777, false}} {
		p := filepath.Join(upper, w.path)
		if err := os.Mkdir(p, w.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, w.mode); err != nil {
			return err
		}
		if w.user {
			if err := os.Chown(p, cfg.UID, cfg.GID); err != nil {
				return err
			}
		}
	}
	if cfg.UserName == "" {
		return nil
	}
	u := runtime.User{Name: cfg.UserName, Home: cfg.Home}
	return hostside.WriteUserFiles(upper, append([]string{cfg.Lower}, cfg.Lowers...), cfg.UID, cfg.GID, u)
}

// bindTemplate mounts the template's binds read-only below root.
func bindTemplate(root string, binds []proto.Bind) error {
	for _, b := range binds {
		if err := bindRO(b.Source, filepath.Join(root, b.Target)); err != nil {
			return err
		}
		// The host's /usr brings programs, and also host configuration
		// (npm's global npmrc, say, which may hold a token): not that.
		if filepath.Clean(b.Target) == "/usr" {
			if err := maskUsrConfig(filepath.Join(root, "usr")); err != nil {
				return err
			}
		}
	}
	return nil
}

// mountOverlay mounts the overlay root with its layers named by
// descriptor: the kernel shows the option string in the sandbox's
// /proc/self/mountinfo, which then holds no host path (the template's,
// the sandbox's state directory).
func mountOverlay(root string, lowers []string, upper, work string) error {
	var fds []string
	for _, d := range append(slices.Clone(lowers), upper, work) {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("overlay layer %s: %w", d, err)
		}
		defer unix.Close(fd)
		fds = append(fds, fmt.Sprintf("/proc/self/fd/%d", fd))
	}
	n := len(fds)
	ovl := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", strings.Join(fds[:n-2], ":"), fds[n-2], fds[n-1])
	// volatile (Linux 5.10+): no sync of the upper layer, whose disk dies
	// with the sandbox, neither for a command's fsync nor at the unmount,
	// which is in the exit of the sandbox's last process (0.3-20 ms of a
	// Destroy measured). A kernel without it mounts without.
	err := unix.Mount("airlock-root", root, "overlay", unix.MS_NOSUID|unix.MS_NODEV, ovl+",volatile")
	if err == unix.EINVAL {
		err = unix.Mount("airlock-root", root, "overlay", unix.MS_NOSUID|unix.MS_NODEV, ovl)
	}
	if err != nil {
		return mountErr("overlay", root, err)
	}
	return nil
}

// maskUsrDir hides the host directory d under a read-only tmpfs that
// holds only what runtime.UsrKept keeps of its files.
func maskUsrDir(d string) error {
	kept := runtime.UsrKept(d)
	if len(kept) == 0 {
		return maskDir(d)
	}
	if err := unix.Mount("airlock-mask", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=256k,nr_inodes=64,mode=0755"); err != nil {
		return mountErr("mask", d, err)
	}
	for name, data := range kept {
		if err := os.WriteFile(filepath.Join(d, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := unix.Mount("", d, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=256k,nr_inodes=64,mode=0755"); err != nil {
		return mountErr("read-only remount", d, err)
	}
	return nil
}

// maskDir hides a directory, if there is one, under an empty read-only
// tmpfs.
func maskDir(d string) error {
	if st, err := os.Lstat(d); err != nil || !st.IsDir() {
		return nil
	}
	if err := unix.Mount("airlock-mask", d, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0555"); err != nil {
		return mountErr("mask", d, err)
	}
	return nil
}

// maskUsrConfig hides the places of runtime.UsrConfigPaths under usr, a
// bound host /usr: a file behind /dev/null, read-only (readers see an
// empty configuration, not an error).
func maskUsrConfig(usr string) error {
	for _, m := range runtime.UsrMasks(usr) {
		t := filepath.Join(usr, m.Rel)
		if m.Dir {
			if err := maskUsrDir(t); err != nil {
				return err
			}
			continue
		}
		if err := unix.Mount("/dev/null", t, "", unix.MS_BIND, ""); err != nil {
			return mountErr("mask", t, err)
		}
		fl, err := statfsFlags(t)
		if err != nil {
			return err
		}
		if err := unix.Mount("", t, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|fl, ""); err != nil {
			return mountErr("read-only remount", t, err)
		}
	}
	return nil
}

func statfsFlags(path string) (uintptr, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	var fl uintptr
	for _, m := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&m.st != 0 {
			fl |= m.ms
		}
	}
	return fl, nil
}

// bindRO bind-mounts src on dst read-only, keeping the flags the kernel
// locks for a less privileged mount namespace.
func bindRO(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return mountErr("bind "+src, dst, err)
	}
	fl, err := statfsFlags(dst)
	if err != nil {
		return err
	}
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|fl, ""); err != nil {
		return mountErr("read-only remount", dst, err)
	}
	// The remount covers the top mount only: submounts (a separate
	// /usr/local on the host, say) are made read-only too.
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	err = unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE, attr)
	if err == unix.ENOSYS {
		// a kernel before 5.12: each submount, one at a time
		return remountSubmountsRO(dst)
	}
	if err != nil {
		return mountErr("read-only submounts", dst, err)
	}
	return nil
}

// remountSubmountsRO remounts read-only every mount below dst.
func remountSubmountsRO(dst string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[4], dst+"/") {
			continue
		}
		mp := unescapeMountinfo(f[4])
		fl, err := statfsFlags(mp)
		if err != nil {
			return err
		}
		if err := unix.Mount("", mp, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|fl, ""); err != nil {
			return mountErr("read-only remount", mp, err)
		}
	}
	return nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out = append(out, byte(n))
				i += 3
				continue
			}
		}
		out = append(out, s[i])
	}
	return string(out)
}

func setupProc(root string) error {
	p := filepath.Join(root, "proc")
	if err := unix.Mount("proc", p, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return mountErr("proc", p, err)
	}
	// Files that reveal or poke the host kernel are masked with /dev/null.
	for _, f := range []string{"kcore", "keys", "key-users", "sysrq-trigger", "timer_list", "latency_stats", "sched_debug", "kallsyms", "kpagecount", "kpageflags", "kpagecgroup", "kmsg", "config.gz", "vmallocinfo", "pagetypeinfo", "slabinfo",
		// every block device of the host (other sandboxes' loop devices)
		// and its I/O counters: a covert channel between sandboxes; the
		// host's swap files by path
		"diskstats", "partitions", "swaps"} {
		t := filepath.Join(p, f)
		if _, err := os.Lstat(t); err != nil {
			continue
		}
		if err := unix.Mount("/dev/null", t, "", unix.MS_BIND, ""); err != nil {
			return mountErr("mask", t, err)
		}
	}
	for _, d := range []string{"acpi", "scsi", "asound", "driver", "fs", "irq", "bus", "tty", "sysvipc"} {
		t := filepath.Join(p, d)
		if st, err := os.Lstat(t); err != nil || !st.IsDir() {
			continue
		}
		if d == "fs" || d == "irq" || d == "bus" || d == "tty" || d == "sysvipc" {
			if err := bindRO(t, t); err != nil {
				return err
			}
			continue
		}
		if err := unix.Mount("airlock-mask", t, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0555"); err != nil {
			return mountErr("mask", t, err)
		}
	}
	// Written before /proc/sys turns read-only.
	for _, l := range nsLimits {
		if err := os.WriteFile(filepath.Join(p, "sys/user", l.name), []byte(strconv.Itoa(l.max)), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("namespace limit %s: %w", l.name, err)
		}
	}
	return bindRO(filepath.Join(p, "sys"), filepath.Join(p, "sys"))
}

// nsLimits are the sandbox user namespace's own per-user limits (a new
// namespace starts unlimited). Above them the host's per-user limits
// bound the whole sandbox, whose own host uid owns the namespace.
var nsLimits = []struct {
	name string
	max  int
}{
	// No nested user namespaces, also for anything that slips past
	// seccomp; nor fanotify (seccomp denies it already).
	{"max_user_namespaces", 0},
	{"max_fanotify_groups", 0},
	{"max_fanotify_marks", 0},
	// inotify for each of the agent and the command user: the agent's
	// watches fit (it caps them itself at watch.MaxWatches), and the
	// commands cannot take them from it.
	{"max_inotify_instances", maxInotifyInstances},
	{"max_inotify_watches", watch.MaxWatches},
}

// maxInotifyInstances is the sandbox's inotify instances per user (the
// usual host default); sigPendingMax is RLIMIT_SIGPENDING for the agent
// and every command: queued real-time signals and POSIX timers.
const (
	maxInotifyInstances = 128
	sigPendingMax       = 1024
)

// setupDev makes the sandbox's /dev, with a devpts of at most ptys
// terminals.
func setupDev(root string, ptys int64) error {
	if ptys <= 0 {
		return errors.New("devpts: no pty limit")
	}
	dev := filepath.Join(root, "dev")
	if err := unix.Mount("airlock-dev", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return mountErr("tmpfs", dev, err)
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		t := filepath.Join(dev, n)
		if err := os.WriteFile(t, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+n, t, "", unix.MS_BIND, ""); err != nil {
			return mountErr("bind /dev/"+n, t, err)
		}
	}
	pts := filepath.Join(dev, "pts")
	if err := os.Mkdir(pts, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", ptys)); err != nil {
		return mountErr("devpts", pts, err)
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("airlock-shm", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,nr_inodes=4096,mode=1777"); err != nil {
		return mountErr("tmpfs", shm, err)
	}
	for name, target := range map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	if err := unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return mountErr("read-only remount", dev, err)
	}
	return nil
}

// pivot makes root the new / and detaches the old root entirely, so no
// host path stays reachable.
func pivot(root string) error {
	if err := unix.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	return unix.Chdir("/")
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func setRlimits(cfg *proto.InitConfig) error {
	set := func(res int, v uint64, name string) error {
		if v == 0 {
			return nil
		}
		// syscall.Setrlimit (not unix.) so the Go runtime does not restore
		// its own NOFILE value in children.
		if err := setrlimit(res, v); err != nil {
			return fmt.Errorf("rlimit %s=%s: %w", name, strconv.FormatUint(v, 10), err)
		}
		return nil
	}
	if err := setrlimit(unix.RLIMIT_CORE, 0); err != nil {
		return fmt.Errorf("rlimit core: %w", err)
	}
	if err := set(unix.RLIMIT_NOFILE, cfg.NoFile, "nofile"); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_NPROC, cfg.NProc, "nproc"); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_SIGPENDING, sigPendingMax, "sigpending"); err != nil {
		return err
	}
	return set(unix.RLIMIT_FSIZE, cfg.FSizeBytes, "fsize")
}
