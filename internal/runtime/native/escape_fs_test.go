package native

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// Host secrets, host homes, a host canary and the daemon's own files are
// not reachable by their host paths.
func TestEscapeFSHostSecrets(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	canaryDir := t.TempDir()
	_ = os.Chmod(canaryDir, 0o755)
	canary := filepath.Join(canaryDir, "canary-"+randHex(t, 4))
	if err := os.WriteFile(canary, []byte("host canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb := escSandbox(t, withProbe(t))

	// Paths that must not be readable, each with why it matters.
	paths := []string{
		canary,    // world-readable host file: only the mount namespace hides it
		canaryDir, // and its directory
		"/etc/shadow",
		"/etc/gshadow",
		"/root/.ssh/id_rsa",
		"/root/.ssh",
		"/root/.aws/credentials",
		"/root/.bash_history",
		exe,      // the daemon's (here: the test's) binary
		testRoot, // the daemon's state and data
		filepath.Join(testRoot, "state", "sandboxes", sb.ID(), "info.json"),
		"/run/airlock",
		"/var/run/docker.sock",
		"/run/containerd/containerd.sock",
		"/run/dbus/system_bus_socket",
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, home, filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".config"))
	}
	for _, p := range paths {
		pr := mustProbe(t, sb, "read", p)
		assertDenied(t, pr, "ENOENT", "EACCES", "EISDIR", "ENOTDIR")
		if pr.Errno == "EISDIR" {
			// a directory exists at that path: it must not be the host's
			if ls := mustProbe(t, sb, "readdir", p); ls.OK && ls.N > 0 {
				t.Errorf("host directory %s is listable inside: %s", p, ls)
			}
		}
	}
	// (the /etc/shadow case means something only where the host has one)
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Logf("note: the host has no /etc/shadow (%v)", err)
	}

	// /root is the template's, mode 0700 owned by an unmapped uid.
	assertDenied(t, mustProbe(t, sb, "readdir", "/root"), "EACCES")

	// /home holds only the sandbox user's home, none of the host's homes.
	pr := mustProbe(t, sb, "readdir", "/home")
	if !pr.OK || pr.Detail != "sandbox" {
		t.Errorf("/home inside: want only \"sandbox\", got %s", pr)
	}
	if ents, err := os.ReadDir("/home"); err == nil {
		for _, e := range ents {
			if e.Name() == "sandbox" {
				continue
			}
			assertDenied(t, mustProbe(t, sb, "readdir", "/home/"+e.Name()), "ENOENT")
		}
	}
	// /run and /mnt hold only what the template's root does (nothing,
	// on the host template): no host sockets or mounts.
	for _, d := range []string{"/run", "/mnt", "/sys"} {
		want := templateEntries(t, d)
		if pr := mustProbe(t, sb, "readdir", d); !pr.OK || pr.N != int64(len(want)) || (len(want) > 0 && pr.Detail != strings.Join(want, "\n")) {
			t.Errorf("%s inside must hold only the template's %q: %s", d, want, pr)
		}
	}
}

// Nothing outside the writable set can be changed: the template, host /usr
// and the host workspace stay byte-identical.
func TestEscapeFSReadOnly(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	tpl := hostTemplate(t)
	before := hashTree(t, tpl.Dir)
	tag := "airlock-escape-" + randHex(t, 4)
	var ws string
	sb := escSandbox(t, func(s *runtime.Spec) {
		withProbe(t)(s)
		ws = s.Workspace
	})
	wsBefore := hashTree(t, ws)
	passwdBefore := mustProbe(t, sb, "read", "/etc/passwd")
	if !passwdBefore.OK {
		t.Fatalf("cannot read /etc/passwd inside: %s", passwdBefore)
	}

	type attempt struct {
		args     []string
		accepted []string
	}
	attempts := []attempt{
		{[]string{"create", "/etc/" + tag}, errFSDenied},
		{[]string{"create", "/" + tag}, errFSDenied},
		{[]string{"create", "/usr/bin/" + tag}, errFSDenied},
		{[]string{"create", "/bin/" + tag}, errFSDenied},
		{[]string{"create", "/usr/lib/" + tag}, errFSDenied},
		{[]string{"create", "/root/" + tag}, errFSDenied},
		{[]string{"create", "/proc/" + tag}, append(errFSDenied, "ENOENT")},
		{[]string{"create", "/dev/" + tag}, errFSDenied},
		{[]string{"write", "/etc/passwd", "root::0:0::/root:/bin/sh\n"}, errFSDenied},
		{[]string{"write", "/etc/hosts", "10.0.0.1 evil\n"}, errFSDenied},
		{[]string{"write", "/etc/resolv.conf", "nameserver 10.0.0.1\n"}, errFSDenied},
		{[]string{"write", "/usr/bin/dd", "x"}, append(errFSDenied, "ETXTBSY")},
		{[]string{"open-write", "/bin/sh"}, append(errFSDenied, "ETXTBSY")},
		{[]string{"chmod", "/etc/passwd"}, errFSDenied},
		{[]string{"chmod", "/usr/bin/dd"}, errFSDenied},
		{[]string{"chmod", "/etc"}, errFSDenied},
		{[]string{"chown", "/etc/passwd"}, errFSDenied},
		{[]string{"chown", "/usr/bin"}, errFSDenied},
		{[]string{"chown", "/etc"}, errFSDenied},
		{[]string{"remount-rw"}, errPerm},
	}
	for _, a := range attempts {
		assertDenied(t, mustProbe(t, sb, a.args...), a.accepted...)
	}
	// The same with ordinary tools: unlink, rename, truncate, mkdir, symlink.
	r := sh(t, sb, `
		fail=0
		try() { if "$@" 2>/dev/null; then echo "SUCCEEDED: $*"; fail=1; fi; }
		try rm -f /etc/hosts
		try mv /etc/passwd /etc/passwd.old
		try truncate -s 0 /etc/passwd
		try sh -c ': > /etc/group'
		try mkdir /etc/`+tag+`
		try ln -s /workspace /etc/`+tag+`
		try rm -f /usr/bin/dd
		try mkdir /usr/`+tag+`
		try touch /bin/`+tag+`
		try rmdir /mnt
		try cp /bin/sh /usr/local/bin/`+tag+`
		exit $fail`)
	if r.Status.Code != 0 {
		t.Errorf("ESCAPE: write outside the writable set succeeded:\n%s%s", r.Stdout, r.Stderr)
	}
	if after := mustProbe(t, sb, "read", "/etc/passwd"); after.Detail != passwdBefore.Detail {
		t.Errorf("/etc/passwd changed inside the sandbox: %q -> %q", passwdBefore.Detail, after.Detail)
	}
	// The writable set really is writable (so the denials above mean something).
	r = sh(t, sb, `echo ok > /workspace/w && echo ok > /tmp/w && echo ok > /home/sandbox/w && echo ok > /var/tmp/w && rm /workspace/probe && cat /workspace/w`)
	if r.Status.Code != 0 || r.Stdout != "ok\n" {
		t.Fatalf("writable set not writable: %+v", r)
	}

	for _, p := range []string{"/usr/bin/" + tag, "/usr/lib/" + tag, "/usr/" + tag, "/usr/local/bin/" + tag} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("ESCAPE: %s was created on the host", p)
			_ = os.Remove(p)
		}
	}
	if after := hashTree(t, tpl.Dir); after != before {
		t.Errorf("ESCAPE: template %s changed", tpl.Dir)
	}
	// Spec.Workspace is copied in; the host directory is never changed,
	// even though the sandbox wrote to and deleted from /workspace.
	if after := hashTree(t, ws); after != wsBefore {
		t.Errorf("host workspace %s changed", ws)
	}
}

// Symlinks and hardlinks do not lead out of the sandbox root or make a
// read-only file writable.
func TestEscapeFSLinks(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	canaryDir := t.TempDir()
	_ = os.Chmod(canaryDir, 0o755)
	canary := filepath.Join(canaryDir, "canary")
	if err := os.WriteFile(canary, []byte("host canary via symlink\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A host workspace with planted symlinks: they are copied as symlinks
	// and resolve inside the sandbox, never on the host.
	var ws string
	sb := escSandbox(t, func(s *runtime.Spec) {
		withProbe(t)(s)
		ws = s.Workspace
		for name, target := range map[string]string{
			"shadow-link": "/etc/shadow",
			"canary-link": canary,
			"hostroot":    "/",
			"dotdot":      "../../../../../../../../" + strings.TrimPrefix(canary, "/"),
		} {
			if err := os.Symlink(target, filepath.Join(s.Workspace, name)); err != nil {
				t.Fatal(err)
			}
		}
	})
	r := sh(t, sb, `
		ln -s /etc/shadow /workspace/x
		ln -s `+canary+` /workspace/y
		ln -s /proc/1/root/etc/passwd /workspace/z
		for f in x y z shadow-link canary-link dotdot hostroot/etc/shadow hostroot`+canary+`; do
			if cat /workspace/$f 2>/dev/null; then echo "READ: $f"; fi
		done; true`)
	if strings.Contains(r.Stdout, "READ:") || strings.Contains(r.Stdout, "host canary") {
		t.Errorf("ESCAPE: symlink followed out of the sandbox:\n%s", r.Stdout)
	}
	for _, p := range []string{"/workspace/x", "/workspace/y", "/workspace/shadow-link", "/workspace/canary-link", "/workspace/dotdot"} {
		assertDenied(t, mustProbe(t, sb, "read", p), "ENOENT", "EACCES")
	}

	// Hardlinks of files the user cannot write: refused (protected_hardlinks,
	// Landlock) or, if made, harmless.
	for _, src := range []string{"/etc/passwd", "/etc/hosts", "/usr/bin/su", "/usr/bin/dd"} {
		dst := "/workspace/hl-" + filepath.Base(src)
		pr := mustProbe(t, sb, "link", src, dst)
		if !pr.OK {
			assertDenied(t, pr, "EPERM", "EACCES", "EXDEV", "EROFS")
			continue
		}
		before := mustProbe(t, sb, "read", src)
		w := mustProbe(t, sb, "write", dst, "owned\n")
		after := mustProbe(t, sb, "read", src)
		if w.OK || after.Detail != before.Detail {
			t.Errorf("ESCAPE: hardlink %s -> %s made it writable: %s", dst, src, w)
		}
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "host canary via symlink\n" {
		t.Errorf("host canary changed: %q %v", b, err)
	}
	for _, name := range []string{"shadow-link", "canary-link", "hostroot", "dotdot"} {
		if _, err := os.Lstat(filepath.Join(ws, name)); err != nil {
			t.Errorf("host workspace entry %s: %v", name, err)
		}
	}
}

// Mount, namespace-of-files and file-handle system calls are denied.
func TestEscapeFSMountCalls(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	for _, c := range []string{
		"mount", "mount-proc", "mount-sysfs", "umount2", "umount2-proc", "pivot_root",
		"remount-rw", "chroot", "fsopen", "open_tree", "name_to_handle_at", "open_by_handle_at",
	} {
		assertDenied(t, mustProbe(t, sb, c), errPerm...)
	}
	// the same through the shell tools
	r := sh(t, sb, `mount -t tmpfs none /tmp 2>&1 && echo MOUNTED; umount /usr 2>&1 && echo UNMOUNTED; mount -o remount,rw /usr 2>&1 && echo REMOUNTED; true`)
	if strings.Contains(r.Stdout, "MOUNTED") || strings.Contains(r.Stdout, "REMOUNTED") {
		t.Errorf("ESCAPE: mount tool succeeded: %s", r.Stdout)
	}
	// /usr is still the read-only bind afterwards
	assertDenied(t, mustProbe(t, sb, "create", "/usr/airlock-escape-"+randHex(t, 4)), errFSDenied...)
}

// procfs shows only the sandbox's processes, nothing of the agent, and
// each command has exactly the descriptors it was given.
func TestEscapeFSProcfs(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	for _, c := range []struct {
		args     []string
		accepted []string
	}{
		{[]string{"readdir", "/proc/1/root"}, []string{"EACCES"}},
		{[]string{"readdir", "/proc/1/root/"}, []string{"EACCES"}},
		{[]string{"readdir", "/proc/1/cwd"}, []string{"EACCES"}},
		{[]string{"readdir", "/proc/1/fd"}, []string{"EACCES"}},
		{[]string{"readdir", "/proc/1/map_files"}, []string{"EACCES", "EPERM"}},
		{[]string{"read", "/proc/1/environ"}, []string{"EACCES"}},
		{[]string{"read", "/proc/1/mem"}, []string{"EACCES", "EPERM", "EIO"}},
		{[]string{"read", "/proc/1/exe"}, []string{"EACCES"}},
		{[]string{"read", "/proc/1/fd/3"}, []string{"EACCES", "ENXIO"}},
		{[]string{"read", "/proc/1/ns/mnt"}, []string{"EACCES"}},
	} {
		assertDenied(t, mustProbe(t, sb, c.args...), c.accepted...)
	}
	// Only the sandbox's processes: the agent (1) and the probe itself.
	pr := mustProbe(t, sb, "pids")
	pids := strings.Fields(pr.Detail)
	if !slices.Contains(pids, "1") || len(pids) > 3 {
		t.Errorf("visible pids: want 1 and the probe, got %q", pids)
	}
	for _, p := range pids {
		if n, _ := strconv.Atoi(p); n > 100000 {
			t.Errorf("a host-looking pid %d is visible inside", n)
		}
	}
	// Own descriptors: 0-2 are the host's pipes, and the listing's own dir.
	checkFds(t, sb, nil)
}

// checkFds runs the probe's fds case and fails on any descriptor besides
// 0, 1, 2 (pipes) and the directory being listed. planted are descriptors
// the test opened on the host; they get a specific message.
func checkFds(t *testing.T, sb runtime.Sandbox, planted map[int]string) {
	t.Helper()
	pr := mustProbe(t, sb, "fds")
	if !pr.OK {
		t.Fatalf("list /proc/self/fd: %s", pr)
	}
	for _, line := range strings.Split(pr.Detail, "\n") {
		fdStr, target, _ := strings.Cut(line, " -> ")
		fd, _ := strconv.Atoi(fdStr)
		switch {
		case fd <= 2 && strings.HasPrefix(target, "pipe:["):
		case strings.HasPrefix(target, "(the directory being listed)"):
		case planted[fd] != "":
			t.Errorf("ESCAPE: host descriptor %d (%s) leaked into the command: %s", fd, planted[fd], line)
		default:
			t.Errorf("ESCAPE: unexpected descriptor in the command, inherited from the host: %s", line)
		}
	}
}

// Descriptors the daemon holds without O_CLOEXEC (its own caller's, a
// library's) must not reach sandboxed commands: through one, a command
// reads and writes host files that no path inside leads to. The test plants
// such descriptors (a writable host file, a readable one, a directory), so
// it does not depend on what the environment leaks.
func TestEscapeFSInheritedFds(t *testing.T) {
	needRuntime(t)
	// Not parallel: the planted descriptors would leak into every process
	// the other tests start.
	dir := t.TempDir()
	logPath := filepath.Join(dir, "host-log")
	secretPath := filepath.Join(dir, "host-secret")
	if err := os.WriteFile(logPath, []byte("original\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretPath, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := map[int]string{}
	plant := func(p string, mode int) int {
		fd, err := syscall.Open(p, mode, 0) // no O_CLOEXEC, on purpose
		if err != nil {
			t.Fatal(err)
		}
		planted[fd] = p
		t.Cleanup(func() { syscall.Close(fd) })
		return fd
	}
	wfd := plant(logPath, syscall.O_WRONLY|syscall.O_APPEND)
	rfd := plant(secretPath, syscall.O_RDONLY)
	dfd := plant(dir, syscall.O_RDONLY|syscall.O_DIRECTORY)

	sb := escSandbox(t, withProbe(t))
	// Close them on the host before the checks so they cannot leak
	// anywhere else; what the sandbox got, it got at creation.
	for fd := range planted {
		syscall.Close(fd)
	}

	checkFds(t, sb, planted)
	assertDenied(t, mustProbe(t, sb, "fd-write", strconv.Itoa(wfd), "written from the sandbox\n"), "EBADF")
	assertDenied(t, mustProbe(t, sb, "fd-read", strconv.Itoa(rfd)), "EBADF")
	assertDenied(t, mustProbe(t, sb, "fd-openat", strconv.Itoa(dfd), "host-secret"), "EBADF", "EACCES")
	if b, _ := os.ReadFile(logPath); string(b) != "original\n" {
		t.Errorf("ESCAPE: host file %s written from inside the sandbox: %q", logPath, b)
	}
}

// A secret in the daemon's environment appears nowhere inside.
func TestEscapeFSEnvSecret(t *testing.T) {
	needRuntime(t)
	// Not parallel: t.Setenv.
	name := "AIRLOCK_ESCAPE_SECRET_" + strings.ToUpper(randHex(t, 4))
	value := "s3cr3t-" + randHex(t, 12)
	t.Setenv(name, value)
	sb := escSandbox(t, withProbe(t))
	r := sh(t, sb, `env; cat /proc/self/environ /proc/*/environ 2>/dev/null; for p in /proc/[0-9]*; do tr '\0' '\n' < $p/environ 2>/dev/null; done; true`)
	if strings.Contains(r.Stdout, value) || strings.Contains(r.Stdout, name) {
		t.Errorf("ESCAPE: daemon environment secret %s visible inside", name)
	}
	// the probe scans every readable environ and cmdline, its own included
	// (hex-encoded, so the probe's own command line does not contain it)
	pr := mustProbe(t, sb, "environ-scan", hex.EncodeToString([]byte(value)))
	if pr.OK {
		t.Errorf("ESCAPE: daemon environment secret found in %s", pr.Detail)
	}
	if pr.N == 0 {
		t.Errorf("environ-scan read no environ at all, the check is void: %s", pr)
	}
	// the base environment is what the backend documents, plus nothing of ours
	if !strings.Contains(r.Stdout, "HOME=/home/sandbox") {
		t.Errorf("env inside lacks HOME=/home/sandbox, the check is void: %q", r.Stdout)
	}
}

// Kernel tunables, sysfs and devices cannot be written or opened.
func TestEscapeFSKernelFiles(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	hostname, _ := os.Hostname()
	corePattern, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
	sb := escSandbox(t, withProbe(t))

	procDenied := []string{"EACCES", "EPERM", "EROFS", "ENOENT"}
	for _, c := range [][]string{
		{"write", "/proc/sys/kernel/hostname", "pwned"},
		{"write", "/proc/sys/kernel/core_pattern", "|/tmp/x"},
		{"write", "/proc/sys/kernel/modprobe", "/tmp/x"},
		{"write", "/proc/sys/vm/drop_caches", "3"},
		{"write", "/proc/sys/user/max_user_namespaces", "100"},
		{"write", "/proc/sys/net/ipv4/ip_forward", "1"},
		{"write", "/proc/self/oom_score_adj", "-1000"},
		{"write", "/proc/1/oom_score_adj", "1000"},
		{"create", "/sys/pwned"},
		{"write", "/sys/kernel/uevent_helper", "/tmp/x"},
		{"write", "/sys/fs/cgroup/cgroup.procs", "1"},
		{"write", "/proc/self/attr/current", "unconfined"},
		{"write", "/proc/self/uid_map", "0 0 1"},
		{"write", "/proc/self/gid_map", "0 0 1"},
		{"write", "/proc/self/setgroups", "allow"},
		{"write", "/proc/self/coredump_filter", "0xff"},
	} {
		assertDenied(t, mustProbe(t, sb, c...), append(procDenied, "EINVAL")...)
	}
	// Masked or absent: these may be /dev/null bind mounts (harmless: the
	// write goes nowhere) or missing in a sandbox's procfs.
	for _, p := range []string{"/proc/sysrq-trigger", "/proc/kcore", "/proc/kmsg", "/proc/timer_list", "/proc/keys"} {
		pr := mustProbe(t, sb, "write", p, "c")
		if pr.OK && !strings.Contains(pr.Detail, "type=char rdev=1:3") {
			t.Errorf("ESCAPE: %s is writable and not masked: %s", p, pr)
		}
		if !pr.OK {
			assertDenied(t, pr, procDenied...)
		}
		rd := mustProbe(t, sb, "read", p)
		if rd.OK && rd.N > 0 {
			t.Errorf("%s is readable inside: %d bytes", p, rd.N)
		}
	}
	// Devices: not there, or not openable. /dev is read-only.
	for _, d := range []string{"/dev/mem", "/dev/kmem", "/dev/port", "/dev/kvm", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/kmsg", "/dev/fuse", "/dev/net/tun", "/dev/console", "/dev/tty0", "/dev/loop0", "/dev/loop-control"} {
		assertDenied(t, mustProbe(t, sb, "open", d), "ENOENT", "EACCES", "EPERM", "ENXIO")
	}
	for _, c := range [][]string{
		{"mknod-char", "/tmp/null"}, {"mknod-char", "/workspace/null"}, {"mknod-char", "/dev/shm/null"},
		{"mknod-block", "/tmp/vda"}, {"mknod-block", "/workspace/vda"},
	} {
		assertDenied(t, mustProbe(t, sb, c...), "EPERM")
	}
	// fifos are fine (not a device), which shows mknod itself is reachable
	if pr := mustProbe(t, sb, "mknod-fifo", "/tmp/fifo"); !pr.OK {
		t.Logf("note: mknod of a fifo also fails: %s", pr)
	}

	if h, _ := os.Hostname(); h != hostname {
		t.Errorf("ESCAPE: host name changed from %q to %q", hostname, h)
	}
	if b, _ := os.ReadFile("/proc/sys/kernel/core_pattern"); !bytes.Equal(b, corePattern) {
		t.Errorf("ESCAPE: host core_pattern changed to %q", b)
	}
	// the sandbox's own hostname is its own, and unchanged
	if r := sh(t, sb, "hostname"); strings.TrimSpace(r.Stdout) != DefaultHostname {
		t.Errorf("hostname inside: %q", r.Stdout)
	}
}

// The agent's binary behind /proc/1/exe cannot be opened for writing, nor
// read, nor reached by its host path, and the host binaries (the daemon's
// and the copy the agent runs from) are unchanged.
func TestEscapeFSAgentBinary(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb := escSandbox(t, withProbe(t))
	exes := []string{self}
	if agentExe := impl(t, sb).b.exe; agentExe != "" && agentExe != self {
		exes = append(exes, agentExe)
	}
	before := map[string]string{}
	for _, e := range exes {
		before[e] = hashFile(t, e)
	}
	for _, c := range []struct {
		args     []string
		accepted []string
	}{
		{[]string{"open-write", "/proc/1/exe"}, []string{"EACCES", "ETXTBSY", "EPERM"}},
		{[]string{"read", "/proc/1/exe"}, []string{"EACCES", "EPERM"}},
		{[]string{"readdir", "/proc/1/map_files"}, []string{"EACCES", "EPERM"}},
	} {
		assertDenied(t, mustProbe(t, sb, c.args...), c.accepted...)
	}
	for _, e := range exes {
		assertDenied(t, mustProbe(t, sb, "open-write", e), "ENOENT", "EACCES")
	}
	// no process inside runs from a writable executable
	r := sh(t, sb, `for p in /proc/[0-9]*; do if { : >> $p/exe; } 2>/dev/null; then echo "WRITABLE $p/exe -> $(readlink $p/exe)"; fi; done; true`)
	if strings.Contains(r.Stdout, "WRITABLE") {
		t.Errorf("ESCAPE: a process's executable is writable from inside: %s", r.Stdout)
	}
	for _, e := range exes {
		if after := hashFile(t, e); after != before[e] {
			t.Errorf("ESCAPE: host binary %s changed", e)
		}
	}
}

// Two sandboxes cannot reach each other's files by any path.
func TestEscapeFSCrossSandbox(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	secret := "cross-" + randHex(t, 8)
	a := escSandbox(t, withProbe(t))
	b := escSandbox(t, withProbe(t))
	ia, ib := a.Info().Isolation, b.Info().Isolation
	if ia.UIDBase == ib.UIDBase || ia.UIDBase < UIDRangeStart || ib.UIDBase < UIDRangeStart {
		t.Errorf("uid bases: A %d, B %d: must differ and be unprivileged", ia.UIDBase, ib.UIDBase)
	}
	r := sh(t, a, `echo `+secret+` > /workspace/a-secret && echo `+secret+` > /tmp/a-secret && echo `+secret+` > /dev/shm/a-secret && echo `+secret+` > /home/sandbox/a-secret && chmod 644 /workspace/a-secret && (setsid sleep 30 >/dev/null 2>&1 &) && echo ok`)
	if r.Stdout != "ok\n" {
		t.Fatalf("sandbox A setup: %+v", r)
	}
	sa := impl(t, a)
	paths := []string{
		"/workspace/a-secret", "/tmp/a-secret", "/dev/shm/a-secret", "/home/sandbox/a-secret",
		filepath.Join(sa.dir, "disk", "upper", "workspace", "a-secret"),
		filepath.Join(sa.dir, "disk", "root", "workspace", "a-secret"),
	}
	// A's processes by their host pids and by guessed small pids.
	for _, pid := range append([]int{sa.InitPID()}, hostPidsOf(t, sa.uidBase)...) {
		paths = append(paths, "/proc/"+strconv.Itoa(pid)+"/root/workspace/a-secret")
	}
	for pid := 1; pid <= 20; pid++ {
		paths = append(paths, "/proc/"+strconv.Itoa(pid)+"/root/workspace/a-secret", "/proc/"+strconv.Itoa(pid)+"/root/tmp/a-secret")
	}
	for _, p := range paths {
		if pr := mustProbe(t, b, "read", p); pr.OK || strings.Contains(pr.Detail, secret) {
			t.Errorf("ESCAPE: sandbox B read A's file at %s: %s", p, pr)
		}
	}
	r = sh(t, b, `grep -rl `+secret+` /workspace /tmp /dev/shm /home /var /run /mnt /etc /root 2>/dev/null; true`)
	if strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("ESCAPE: sandbox B found A's secret at %s", r.Stdout)
	}
	// B cannot signal A's processes either.
	for _, pid := range append([]int{sa.InitPID()}, hostPidsOf(t, sa.uidBase)...) {
		assertDenied(t, mustProbe(t, b, "kill", strconv.Itoa(pid), "0"), "ESRCH", "EPERM")
	}
}

// hostPidsOf lists host processes whose real uid is in the range of the
// sandbox with the given uid base.
func hostPidsOf(t testing.TB, uidBase int) []int {
	t.Helper()
	var pids []int
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if uid, ok := procUID(pid); ok && uid >= uidBase && uid < uidBase+uidRangeSize {
			pids = append(pids, pid)
		}
	}
	return pids
}

func procUID(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, err := strconv.Atoi(f[1])
			return uid, err == nil
		}
	}
	return 0, false
}

// Threat model, Filesystem: a FIFO or device that sandbox code puts where
// the host's file API writes, reads or tars is refused at once; it never
// blocks the agent, and the host's call never outlives its context.
func TestEscapeFSFileAPIFifos(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	if r := sh(t, sb, `mkfifo /workspace/out /workspace/in && mkdir /workspace/d && mkfifo /workspace/d/pipe && echo ok > /workspace/d/file && ln -s /dev /workspace/devs`); r.Status.Code != 0 {
		t.Fatalf("setup: %+v %s", r.Status, r.Stderr)
	}
	fs := sb.(runtime.Files)
	within := func(what string, f func(ctx context.Context) error) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- f(ctx) }()
		select {
		case err := <-done:
			if time.Since(start) > time.Second {
				t.Errorf("%s: took %s", what, time.Since(start))
			}
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still blocked 3s after its deadline", what)
			return nil
		}
	}
	if err := within("write into a FIFO", func(ctx context.Context) error {
		_, err := fs.WriteFile(ctx, "/workspace/out", bytes.NewReader(make([]byte, 1<<20)), 0o644, false)
		return err
	}); err == nil {
		t.Error("write into a FIFO: no error")
	}
	if err := within("read a FIFO", func(ctx context.Context) error {
		_, err := fs.ReadFile(ctx, "/workspace/in", io.Discard, 0)
		return err
	}); err == nil {
		t.Error("read of a FIFO: no error")
	}
	if err := within("write to the terminal through a planted link", func(ctx context.Context) error {
		_, err := fs.WriteFile(ctx, "/workspace/devs/tty", strings.NewReader("x"), 0o644, false)
		return err
	}); err == nil {
		t.Error("write to /dev/tty through a link: no error")
	}
	var tarred bytes.Buffer
	if err := within("tar a directory with a FIFO", func(ctx context.Context) error {
		_, err := fs.Tar(ctx, "/workspace/d", &tarred)
		return err
	}); err != nil {
		t.Errorf("tar: %v", err)
	}
	if !bytes.Contains(tarred.Bytes(), []byte("ok\n")) {
		t.Error("tar lost the regular file next to the FIFO")
	}
	// The agent is not stuck: a command still runs.
	if r := sh(t, sb, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("after the FIFOs: %+v %q", r.Status, r.Stdout)
	}
}
