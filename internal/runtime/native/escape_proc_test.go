package native

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/landlock"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Commands hold no capability in any set, cannot gain one, and cannot
// become root, not even through a setuid binary.
func TestEscapeProcCredentials(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))

	r := sh(t, sb, `cat /proc/self/status`)
	status := map[string]string{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	for k, want := range map[string]string{
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
		"NoNewPrivs": "1", "Seccomp": "2",
	} {
		if status[k] != want {
			t.Errorf("/proc/self/status %s = %q, want %q", k, status[k], want)
		}
	}
	for _, k := range []string{"Uid", "Gid"} {
		if f := strings.Fields(status[k]); len(f) != 4 || f[0] != "1000" || f[1] != "1000" || f[2] != "1000" || f[3] != "1000" {
			t.Errorf("/proc/self/status %s = %q, want 1000 everywhere", k, status[k])
		}
	}
	if status["Groups"] != "" {
		t.Errorf("supplementary groups: %q", status["Groups"])
	}
	if pr := mustProbe(t, sb, "ids"); pr.Detail != "uid=1000,1000,1000 gid=1000,1000,1000 groups=[]" {
		t.Errorf("ids: %s", pr)
	}

	for _, c := range []string{"setuid", "setresuid", "setgid", "setgroups", "capset", "cap-ambient"} {
		assertDenied(t, mustProbe(t, sb, c), errPerm...)
	}

	// A setuid-root binary from the read-only /usr: it must run with euid
	// 1000. su blocks reading the password from a fifo while we look at
	// its credentials.
	suid := ""
	for _, p := range []string{"/usr/bin/su", "/usr/bin/passwd", "/usr/bin/newgrp", "/usr/bin/mount"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSetuid != 0 {
			suid = p
			break
		}
	}
	switch {
	case suid == "":
		t.Log("no setuid binary in host /usr; skipping the setuid check")
	case imageTemplate():
		// an image's /usr is its own, and the import removed its setuid
		// bits (TestEscapeImportedImage runs the setuid files of a
		// hostile image)
		t.Log("an imported image has no setuid binary; skipping the setuid check")
	default:
		r := sh(t, sb, `
			ls -l `+suid+` | cut -c1-10
			mkfifo /tmp/pw
			`+suid+` root -c true < /tmp/pw >/dev/null 2>&1 &
			pid=$!
			exec 3>/tmp/pw
			i=0
			while [ $i -lt 50 ]; do
				if grep -q '^Uid:' /proc/$pid/status 2>/dev/null && [ "$(readlink /proc/$pid/exe)" = "`+suid+`" ]; then break; fi
				sleep 0.05; i=$((i+1))
			done
			grep -E '^(Uid|Gid|CapEff):' /proc/$pid/status
			kill $pid 2>/dev/null; true`)
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if len(lines) < 3 || !strings.Contains(lines[0], "s") {
			t.Fatalf("setuid check did not run (%s not setuid inside, or exited at once): %q %q", suid, r.Stdout, r.Stderr)
		}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			switch f[0] {
			case "Uid:", "Gid:":
				if len(f) != 5 || f[1] != "1000" || f[2] != "1000" || f[3] != "1000" {
					t.Errorf("ESCAPE: setuid binary %s gained privileges: %s", suid, l)
				}
			case "CapEff:":
				if f[1] != "0000000000000000" {
					t.Errorf("ESCAPE: setuid binary %s has capabilities: %s", suid, l)
				}
			}
		}
	}
	// /usr is mounted nosuid as well (defence in depth): its own mount
	// on the host template, the root's on an image
	if r := sh(t, sb, `awk '$5=="/usr"{u=$6} $5=="/"{r=$6} END{print (u!="" ? u : r)}' /proc/self/mountinfo`); !strings.Contains(r.Stdout, "nosuid") {
		t.Errorf("/usr is not mounted nosuid: %q", r.Stdout)
	}

	for _, script := range []string{"unshare -Ur id -u", "unshare -r id -u", "unshare -m true", "unshare -n true", "unshare -p -f true"} {
		if r := sh(t, sb, script); r.Status.Code == 0 || strings.TrimSpace(r.Stdout) == "0" {
			t.Errorf("ESCAPE: %q succeeded: %+v", script, r)
		}
	}

	// What the backend says it applied.
	iso := sb.Info().Isolation
	if iso.Seccomp == "" {
		t.Error("Info: no seccomp reported")
	}
	if abi, err := landlock.ABI(); err == nil && abi > 0 && iso.LandlockABI == 0 {
		t.Errorf("Info: kernel has Landlock ABI %d but the sandbox reports none", abi)
	}
}

// Every dangerous system call of the threat model is denied by the seccomp
// filter (EPERM for the explicitly denied ones).
func TestEscapeProcSyscalls(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	for _, c := range []struct {
		args     []string
		accepted []string
	}{
		{[]string{"unshare-user"}, errPerm},
		{[]string{"unshare-mount"}, errPerm},
		{[]string{"unshare-net"}, errPerm},
		{[]string{"clone-newuser"}, errPerm},
		{[]string{"clone-newns"}, errPerm},
		{[]string{"clone3-newuser"}, errPermOr("ENOSYS")},
		{[]string{"clone-newuser-highbits"}, errPerm},
		{[]string{"setns"}, errPerm},
		{[]string{"setns-init"}, errPermOr("EACCES")},
		{[]string{"ptrace-attach", "1"}, errPerm},
		{[]string{"ptrace-seize-parent"}, errPerm},
		{[]string{"ptrace-traceme"}, errPerm},
		{[]string{"process_vm_readv", "1"}, errPerm},
		{[]string{"process_vm_writev", "1"}, errPerm},
		{[]string{"kcmp"}, errPerm},
		{[]string{"pidfd_getfd"}, errPerm},
		{[]string{"bpf"}, errPerm},
		{[]string{"perf_event_open"}, errPerm},
		{[]string{"keyctl"}, errPerm},
		{[]string{"add_key"}, errPerm},
		{[]string{"request_key"}, errPerm},
		{[]string{"userfaultfd"}, errPerm},
		{[]string{"io_uring_setup"}, errPerm},
		{[]string{"init_module"}, errPerm},
		{[]string{"finit_module"}, errPerm},
		{[]string{"delete_module"}, errPerm},
		{[]string{"kexec_load"}, errPerm},
		{[]string{"kexec_file_load"}, errPerm},
		{[]string{"reboot"}, errPerm},
		{[]string{"swapon"}, errPerm},
		{[]string{"sethostname"}, errPerm},
		{[]string{"clock_settime"}, errPerm},
		{[]string{"syslog"}, errPerm},
		{[]string{"iopl"}, errPerm},
		{[]string{"ioperm"}, errPerm},
		{[]string{"personality"}, errPerm},
		{[]string{"fanotify_init"}, errPerm},
		{[]string{"x32"}, errPermOr("ENOSYS")},
		{[]string{"socket-vsock"}, []string{"EAFNOSUPPORT", "EPERM"}},
		{[]string{"socket-alg"}, []string{"EAFNOSUPPORT", "EPERM"}},
		{[]string{"socket-raw-highbits"}, errPerm},
	} {
		pr, res, ok := runProbe(t, sb, c.args...)
		if !ok {
			t.Errorf("probe %v printed no result: %+v %q", c.args, res.Status, res.Stderr)
			continue
		}
		assertDenied(t, pr, c.accepted...)
	}

	// int 0x80 (the i386 ABI): the filter kills the process with SIGSYS.
	// Were i386 emulation off in the kernel, the call would fault
	// (SIGSEGV); either way it must not return a result.
	pr, res, ok := runProbe(t, sb, "int80")
	switch {
	case ok && pr.OK:
		t.Errorf("ESCAPE: i386 syscall through int 0x80 ran: %s", pr)
	case ok:
		t.Logf("int 0x80 returned an error instead of killing: %s", pr)
	case res.Status.Signal == "SIGSYS" && res.Status.Code == 159:
	case res.Status.Signal == "SIGSEGV",
		// The Go runtime turns the fault into a fatal error (exit 2):
		// a kernel without i386 emulation (IA32_EMULATION off, as on
		// some CI machines) faults on int 0x80 instead of running it.
		res.Status.Code == 2 && strings.Contains(res.Stderr, "signal SIGSEGV") && strings.Contains(res.Stderr, "main.int80("):
		t.Logf("int 0x80 faulted (no i386 emulation): %+v", res.Status)
	default:
		t.Errorf("int 0x80: want death by SIGSYS (159), got %+v\n%s", res.Status, res.Stderr)
	}
	// ... and the sandbox carries on
	if r := sh(t, sb, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("sandbox unusable after the SIGSYS kill: %+v", r)
	}
}

// Keystroke injection: TIOCSTI and TIOCLINUX are denied on every terminal,
// and each command runs in a session of its own without a controlling tty.
func TestEscapeProcTerminal(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	assertDenied(t, mustProbe(t, sb, "tiocsti-stdin"), errPerm...)
	// a pty the command made itself: a real tty, so only the filter stops it
	assertDenied(t, mustProbe(t, sb, "tiocsti-pty"), errPerm...)
	assertDenied(t, mustProbe(t, sb, "tioclinux"), errPerm...)
	// garbage in the upper half of the request register must not slip by
	assertDenied(t, mustProbe(t, sb, "tiocsti-highbits"), errPerm...)
	// no controlling terminal to open (ENXIO); if there were one, EPERM
	assertDenied(t, mustProbe(t, sb, "tiocsti-tty"), "ENXIO", "EPERM")

	pr := mustProbe(t, sb, "sid")
	f := map[string]string{}
	for _, kv := range strings.Fields(pr.Detail) {
		k, v, _ := strings.Cut(kv, "=")
		f[k] = v
	}
	if f["pid"] == "" || f["sid"] != f["pid"] {
		t.Errorf("command is not a session leader (setsid): %s", pr.Detail)
	}
	if f["tty_nr"] != "0" {
		t.Errorf("command has a controlling terminal: %s", pr.Detail)
	}
}

// The agent (PID 1) cannot be killed, stopped or traced, and the host's
// processes are not even visible.
func TestEscapeProcKillAgent(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	s := impl(t, sb)
	for _, sig := range []string{"9", "15", "19", "1", "2", "10"} {
		assertDenied(t, mustProbe(t, sb, "kill", "1", sig), "EPERM")
	}
	assertDenied(t, mustProbe(t, sb, "ptrace-attach", "1"), errPerm...)
	assertDenied(t, mustProbe(t, sb, "pidfd-kill", "1"), errPerm...)
	// the test process (the daemon) and host init by their host pids
	for _, pid := range []int{os.Getpid(), os.Getppid(), s.InitPID()} {
		if pid <= 1 {
			continue
		}
		pr := mustProbe(t, sb, "kill", strconv.Itoa(pid), "0")
		if pr.OK {
			// a pid of the sandbox's own namespace may have that number;
			// it is then one of the sandbox's processes, which is fine
			t.Logf("pid %d exists inside the sandbox (its own process): %s", pid, pr)
			continue
		}
		assertDenied(t, pr, "ESRCH", "EPERM")
	}
	// kill everything one may: the command's own processes die, not the agent
	sh(t, sb, `kill -9 -1; kill -9 1; kill -STOP 1; true`)
	if r := sh(t, sb, "echo alive"); r.Stdout != "alive\n" {
		t.Fatalf("ESCAPE: agent killed from inside: %+v", r)
	}
	if st := procState(s.InitPID()); st == "T" || st == "t" || st == "" {
		t.Errorf("agent state %q after kill attempts", st)
	}
	select {
	case <-sb.Done():
		t.Error("sandbox stopped after kill attempts")
	default:
	}
}

// Host unix sockets (by path or abstract name) cannot be reached.
func TestEscapeProcHostSockets(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "daemon.sock")
	abstract := "@airlock-escape-" + randHex(t, 6)
	var accepted atomic.Int64
	for _, addr := range []string{path, abstract} {
		ln, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				_, _ = c.Write([]byte("host daemon secret"))
				c.Close()
			}
		}()
	}
	_ = os.Chmod(path, 0o777)
	// prove both listeners answer on the host
	for _, addr := range []string{path, abstract} {
		c, err := net.Dial("unix", addr)
		if err != nil {
			t.Fatalf("host cannot reach its own socket %s: %v", addr, err)
		}
		c.Close()
	}
	for deadline := time.Now().Add(5 * time.Second); accepted.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("host listeners accepted %d of the host's 2 connections", accepted.Load())
		}
	}
	hostAccepted := accepted.Load()

	sb := escSandbox(t, withProbe(t))
	assertDenied(t, mustProbe(t, sb, "unix-connect", path), "ENOENT", "EACCES")
	// abstract sockets belong to the network namespace (and Landlock scopes
	// them): refused or absent
	assertDenied(t, mustProbe(t, sb, "unix-connect", abstract), "ECONNREFUSED", "ENOENT", "EPERM")
	for _, p := range []string{"/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock", "/run/dbus/system_bus_socket", "/run/systemd/private", "/run/airlock/airlock.sock", "@/org/freedesktop/systemd1/notify"} {
		assertDenied(t, mustProbe(t, sb, "unix-connect", p), "ENOENT", "ECONNREFUSED", "EACCES", "EPERM")
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n != hostAccepted {
		t.Errorf("ESCAPE: the host listeners accepted %d connections from the sandbox", n-hostAccepted)
	}
}

// Orphans (setsid, nohup, double fork) let the command return, stay inside
// the sandbox, and die with it.
func TestEscapeProcOrphans(t *testing.T) {
	needRuntime(t)
	// Not parallel: compares the backend's process census before and after.
	createMu.Lock()
	defer createMu.Unlock()
	b := newTestBackend(t)
	before, err := b.Census()
	if err != nil {
		t.Fatal(err)
	}
	tag := strconv.Itoa(int(time.Now().UnixNano()%1000000) + 1000)
	tagA, tagB, tagC := "1000."+tag+"1", "1000."+tag+"2", "1000."+tag+"3"

	sb, err := b.Create(context.Background(), hostSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			_ = sb.Destroy(context.Background())
		}
	})
	s := impl(t, sb)
	start := time.Now()
	r := sh(t, sb, `
		setsid nohup sleep `+tagA+` >/dev/null 2>&1 &
		( (sleep `+tagB+` </dev/null >/dev/null 2>&1 &) & )
		( (setsid sleep `+tagC+` &) & )
		echo started`)
	if r.Stdout != "started\n" || r.Status.Code != 0 {
		t.Fatalf("orphan script: %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the command took %s to return: background processes held it", d)
	}
	// the orphans are visible inside ...
	// (from /proc, not ps: an image template may have no procps)
	r = sh(t, sb, `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done`)
	for _, tg := range []string{tagA, tagB, tagC} {
		if !strings.Contains(r.Stdout, tg) {
			t.Errorf("orphan sleep %s not visible inside: %s", tg, r.Stdout)
		}
	}
	// ... and on the host they run as the sandbox's uids, in its cgroup
	var hostPids []int
	for _, tg := range []string{tagA, tagB, tagC} {
		pids := hostPidsWithArg(t, tg)
		if len(pids) != 1 {
			t.Fatalf("host: want one process with argument %s, got %v", tg, pids)
		}
		hostPids = append(hostPids, pids[0])
		uid, _ := procUID(pids[0])
		if uid < s.uidBase || uid >= s.uidBase+uidRangeSize {
			t.Errorf("orphan %d runs as host uid %d, outside the sandbox range %d+", pids[0], uid, s.uidBase)
		}
	}
	procs, _ := s.Cgroup().Procs()
	for _, p := range hostPids {
		found := false
		for _, q := range procs {
			found = found || p == q
		}
		if !found {
			t.Errorf("orphan %d is not in the sandbox's cgroup %v", p, procs)
		}
	}

	if err := sb.Destroy(context.Background()); err != nil {
		t.Errorf("destroy: %v", err)
	}
	destroyed = true
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []int
		for _, tg := range []string{tagA, tagB, tagC} {
			left = append(left, hostPidsWithArg(t, tg)...)
		}
		inRange := hostPidsOf(t, s.uidBase)
		if len(left) == 0 && len(inRange) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("LEAK: processes survived destroy: tagged %v, in the sandbox uid range %v", left, inRange)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// (The census's process count is host-wide: other test packages run
	// sandboxes in parallel, so only this backend's own counts can be
	// compared.)
	after, err := b.Census()
	if err != nil {
		t.Fatal(err)
	}
	if after.StateDirs > before.StateDirs || after.Cgroups > before.Cgroups || after.Mounts > before.Mounts {
		t.Errorf("LEAK: census %+v before, %+v after destroy", before, after)
	}
}

// A busy loop past the command timeout is killed and reported as a timeout.
func TestEscapeProcTimeout(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, nil)
	s := impl(t, sb)
	start := time.Now()
	res := run(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "while :; do :; done"}, Timeout: time.Second})
	if res.Status.Limit != runtime.LimitTimeout || res.Status.Code != runtime.ExitTimeout {
		t.Errorf("busy loop: want limit timeout and code 124, got %+v", res.Status)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout of 1s took %s", d)
	}
	// the loop is gone: only the agent is left
	time.Sleep(100 * time.Millisecond)
	r := sh(t, sb, `ps -eo pid,args`)
	if strings.Contains(r.Stdout, "while :; do :; done") {
		t.Errorf("busy loop survived its timeout:\n%s", r.Stdout)
	}
	// and on the host no task of the command user is left
	if n := countTasksOfUID(s.uidBase + SandboxUID); n != 0 {
		t.Errorf("%d tasks of the command user left after the timeout", n)
	}
}

// hostPidsWithArg lists host processes with an argv element equal to arg
// or containing it.
func hostPidsWithArg(t testing.TB, arg string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(b, []byte{0}) {
			if bytes.Contains(a, []byte(arg)) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// Reap (run by every New, e.g. by a concurrent one-shot `airlock run`
// sharing the state dir) must never take a sandbox that is being created or
// destroyed for a leftover.
func TestEscapeProcReapRace(t *testing.T) {
	needRuntime(t)
	// Not parallel: a Reap that wrongly wins would tear down other tests'
	// sandboxes too.
	createMu.Lock()
	defer createMu.Unlock()
	b := newTestBackend(t)
	spec := hostSpec(t)
	censusBefore, err := b.Census()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan []string)
	go func() {
		var reaped []string
		for {
			select {
			case <-stop:
				done <- reaped
				return
			default:
			}
			other, err := New(Config{StateDir: b.cfg.StateDir, CgroupParent: b.cfg.CgroupParent})
			if err == nil {
				reaped = append(reaped, other.Reaped...)
			}
		}
	}()
	var failed []string
	for i := 0; i < 15; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sb, err := b.Create(ctx, spec)
		cancel()
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		if r, err := execWait(sb, runtime.ExecRequest{Argv: []string{"/bin/true"}}); err != nil || r.Status.Code != 0 {
			failed = append(failed, fmt.Sprintf("exec in a fresh sandbox: %v %+v", err, r.Status))
		}
		if err := sb.Destroy(context.Background()); err != nil {
			failed = append(failed, "destroy: "+err.Error())
		}
	}
	close(stop)
	reaped := <-done
	if len(failed) > 0 || len(reaped) > 0 {
		t.Errorf("BUG: a concurrent New/Reap broke %d of 15 sandbox lifecycles: %q; it reaped live sandboxes %q", len(failed), failed, reaped)
	}
	// Whatever the race left behind is garbage now (every sandbox of this
	// test is gone, and no other test runs): reap it, so that the
	// package's final leak check judges the other tests, and say if that
	// was needed.
	if left, _ := b.Census(); left.StateDirs > censusBefore.StateDirs || left.Cgroups > censusBefore.Cgroups || left.Mounts > censusBefore.Mounts {
		ids, err := b.Reap()
		t.Errorf("LEAK: after the race: %+v (before %+v); reaped %q (%v)", left, censusBefore, ids, err)
	}
}

// Defence in depth from the runtime review: no nested user namespaces by
// sysctl too (not only seccomp), a pty cap per sandbox, the agent in a
// session of its own (no host terminal), and no host local config under
// a bound /usr.
func TestEscapeHardeningExtras(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	if r := sh(t, sb, "cat /proc/sys/user/max_user_namespaces"); r.Stdout != "0\n" {
		t.Errorf("max_user_namespaces inside: %q %q", r.Stdout, r.Stderr)
	}
	if r := sh(t, sb, "grep ' /dev/pts ' /proc/self/mountinfo"); !strings.Contains(r.Stdout, fmt.Sprintf("max=%d\n", DefaultPtys)) {
		t.Errorf("devpts without a pty cap: %q", r.Stdout)
	}
	pid := impl(t, sb).initPID
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	mySid, _ := unix.Getsid(0)
	if f[3] == strconv.Itoa(mySid) || f[3] != strconv.Itoa(pid) || f[4] != "0" {
		t.Errorf("agent: session %s tty %s; want a session of its own (%d, not the host's %d) and no terminal", f[3], f[4], pid, mySid)
	}
	if st, err := os.Stat("/usr/local/etc"); err == nil && st.IsDir() {
		// nothing but what runtime.UsrKeep keeps (an npmrc's registry)
		if r := sh(t, sb, "ls -A /usr/local/etc | grep -vx npmrc | wc -l; touch /usr/local/etc/x"); !strings.HasPrefix(r.Stdout, "0\n") || r.Status.Code == 0 {
			t.Errorf("/usr/local/etc inside: %q %q (code %d); want it empty but for a kept npmrc, and read-only", r.Stdout, r.Stderr, r.Status.Code)
		}
	}
}

// A bound host directory is read-only also in its submounts.
func TestEscapeBindSubmountsReadOnly(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	d := t.TempDir()
	_ = os.Chmod(filepath.Dir(d), 0o711) // the sandbox's root (an unprivileged host uid) binds it
	_ = os.Chmod(d, 0o755)
	sub := filepath.Join(d, "sub")
	if err := os.Mkdir(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("airlock-test", sub, "tmpfs", 0, "size=1m,mode=0777"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(sub, syscall.MNT_DETACH) })
	sb := newSandbox(t, func(s *runtime.Spec) {
		s.Binds = append(s.Binds, runtime.Bind{Source: d, Target: "/mnt"})
	})
	// (Landlock refuses the write anyway; the mount itself must be ro.)
	r := sh(t, sb, "grep ' /mnt/sub ' /proc/self/mountinfo")
	if fs := strings.Fields(r.Stdout); len(fs) < 6 || !strings.HasPrefix(fs[5], "ro,") {
		t.Errorf("the bound directory's submount inside: %q, want read-only", r.Stdout)
	}
	if r := sh(t, sb, "touch /mnt/sub/f 2>&1; echo $?"); strings.HasSuffix(r.Stdout, "\n0\n") || r.Stdout == "0\n" {
		t.Errorf("writing into a bound directory's submount: %q", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(sub, "f")); err == nil {
		t.Error("ESCAPE: the sandbox wrote into the host's mount")
	}
}

// Threat model, Privilege and processes: the agent never takes a
// sandbox's pty as its terminal (the host's file API reading it must not
// make it so), and a terminal's signals could not end it anyway.
func TestEscapeAgentTakesNoTerminal(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/workspace/probe", "ptmx-hold"}, Stdin: inR, Stdout: outW})
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	pts := "/dev/pts/" + strings.TrimSpace(line)
	if _, err := sb.(runtime.Files).ReadFile(ctx, pts, io.Discard, 0); err == nil {
		t.Errorf("the file API read %s", pts)
	}
	pid := impl(t, sb).initPID
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); f[4] != "0" {
		t.Errorf("ESCAPE: the agent took a terminal (tty_nr %s) when the host read %s", f[4], pts)
	}
	_, _ = inW.Write([]byte("\n")) // the probe types ^C ^Z and hangs up
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	outW.Close()
	if r := sh(t, sb, "echo alive"); r.Stdout != "alive\n" {
		t.Fatalf("ESCAPE: the agent is gone after the pty's signals: %+v %q", r.Status, r.Stdout)
	}
}

// The fallback for kernels without mount_setattr: every submount below a
// bound directory is remounted read-only, paths with spaces included.
func TestRemountSubmountsRO(t *testing.T) {
	needRuntime(t)
	if got := unescapeMountinfo(`/a\040b\134c`); got != `/a b\c` {
		t.Errorf("unescape: %q", got)
	}
	d, d2 := t.TempDir(), t.TempDir()
	sub := filepath.Join(d, "s u b")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("airlock-test", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sub, unix.MNT_DETACH) })
	if err := unix.Mount(d, d2, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(d2, unix.MNT_DETACH) })
	if err := remountSubmountsRO(d2); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(d2, "s u b"), &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
		t.Errorf("the bound copy's submount: flags %#x %v, want read-only", st.Flags, err)
	}
	if err := unix.Statfs(sub, &st); err != nil || st.Flags&unix.ST_RDONLY != 0 {
		t.Errorf("the original submount: flags %#x %v, want it untouched", st.Flags, err)
	}
}
