//go:build linux && amd64

package seccomp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/testroot"
)

// A filter cannot be removed, so everything that runs under it happens in a
// child: the test binary re-executes itself with -test.run=^TestHelperFiltered$
// and helperEnv set; the child locks its goroutine to its thread, sets
// no_new_privs, installs the filter on that thread only and reports one
// "RESULT <json>" line per check on stdout. The parent asserts.
const (
	helperEnv    = "AIRLOCK_SECCOMP_HELPER"      // mode: probes, probes-native, exec
	helperTmpEnv = "AIRLOCK_SECCOMP_HELPER_TMP"  // scratch directory for the child
	helperExec   = "AIRLOCK_SECCOMP_HELPER_EXEC" // JSON execSpec for mode exec
	resultPrefix = "RESULT "
)

// probeResult is what the child reports for one probe.
type probeResult struct {
	Name  string `json:"name"`
	Errno int    `json:"errno"`
	Err   string `json:"err,omitempty"`
}

// probe is one syscall experiment. want is the errno expected under the
// filter (0: success). discriminating marks probes whose result differs
// without the filter (as root here), which TestProbesDiscriminate verifies
// so that the filtered expectations cannot be met by accident.
type probe struct {
	name           string
	call           func(tmp string) (unix.Errno, error)
	want           unix.Errno
	discriminating bool
	needsRoot      bool // discriminating only with root's capabilities
}

const all1 = ^uintptr(0)

// raw performs a syscall with the given arguments, closing any fd it makes.
func raw(trap uintptr, args ...uintptr) func(string) (unix.Errno, error) {
	return func(string) (unix.Errno, error) {
		var a [6]uintptr
		copy(a[:], args)
		r, _, e := unix.Syscall6(trap, a[0], a[1], a[2], a[3], a[4], a[5])
		if e == 0 && (trap == unix.SYS_SOCKET || trap == unix.SYS_MEMFD_CREATE ||
			trap == unix.SYS_PIDFD_OPEN || trap == unix.SYS_LANDLOCK_CREATE_RULESET) {
			unix.Close(int(r))
		}
		return e, nil
	}
}

// withFd runs f with a freshly opened /dev/null descriptor.
func withDevNull(f func(fd uintptr) unix.Errno) func(string) (unix.Errno, error) {
	return func(string) (unix.Errno, error) {
		fd, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		defer unix.Close(fd)
		return f(uintptr(fd)), nil
	}
}

func ioctlProbe(req uintptr) func(string) (unix.Errno, error) {
	return withDevNull(func(fd uintptr) unix.Errno {
		var buf [64]byte
		_, _, e := unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&buf[0])))
		return e
	})
}

func errnoOf(err error) (unix.Errno, error) {
	if err == nil {
		return 0, nil
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e, err
	}
	return 0, err
}

func probes() []probe {
	var ps []probe
	for _, name := range Denied() {
		// All-ones arguments are invalid for every one of these calls, so
		// even an unfiltered call could do no harm.
		ps = append(ps, probe{name: "deny/" + name, call: raw(uintptr(native.sysnums[name]), all1, all1, all1, all1, all1, all1), want: unix.EPERM})
	}
	// Namespace flags combined with CLONE_THREAD but without CLONE_SIGHAND
	// (or with CLONE_FS) are rejected by the kernel with EINVAL before any
	// work, so the unfiltered control run cannot fork the test binary.
	nsFlags := map[string]uintptr{
		"newuser": unix.CLONE_NEWUSER, "newns": unix.CLONE_NEWNS, "newpid": unix.CLONE_NEWPID,
		"newnet": unix.CLONE_NEWNET, "newipc": unix.CLONE_NEWIPC, "newuts": unix.CLONE_NEWUTS,
		"newcgroup": unix.CLONE_NEWCGROUP,
	}
	for n, f := range nsFlags {
		ps = append(ps, probe{name: "clone/" + n, call: raw(unix.SYS_CLONE, f|unix.CLONE_THREAD|unix.CLONE_FS), want: unix.EPERM, discriminating: true})
	}
	ps = append(ps,
		probe{name: "clone/newtime-bit", call: raw(unix.SYS_CLONE, unix.CLONE_NEWTIME|unix.CLONE_THREAD), want: unix.EPERM, discriminating: true},
		// clone3 with a NULL argument is EINVAL without the filter.
		probe{name: "clone3", call: raw(unix.SYS_CLONE3, 0, 0), want: unix.ENOSYS, discriminating: true},
		// The test binary is multi-threaded: unfiltered, this is EINVAL.
		probe{name: "unshare/newuser", call: raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), want: unix.EPERM, discriminating: true},
		probe{name: "unknown/1000", call: raw(1000), want: unix.ENOSYS},
		probe{name: "unknown/lsm_get_self_attr", call: raw(unix.SYS_LSM_GET_SELF_ATTR, all1, all1, all1, all1), want: unix.ENOSYS, discriminating: true},
		probe{name: "x32/getpid", call: raw(unix.SYS_GETPID | 0x40000000), want: unix.EPERM, discriminating: true},
		probe{name: "x32/read", call: raw(unix.SYS_READ|0x40000000, all1, 0, 0), want: unix.EPERM, discriminating: true},

		// /dev/null is not a terminal: unfiltered ioctls fail with ENOTTY.
		probe{name: "ioctl/TIOCSTI", call: ioctlProbe(unix.TIOCSTI), want: unix.EPERM, discriminating: true},
		probe{name: "ioctl/TIOCSTI-high-bits", call: ioctlProbe(1<<32 | unix.TIOCSTI), want: unix.EPERM, discriminating: true},
		probe{name: "ioctl/TIOCLINUX", call: ioctlProbe(unix.TIOCLINUX), want: unix.EPERM, discriminating: true},
		probe{name: "ioctl/TCGETS", call: ioctlProbe(unix.TCGETS), want: unix.ENOTTY},
		probe{name: "ioctl/FIONREAD-pipe", call: func(string) (unix.Errno, error) {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				return errnoOf(err)
			}
			defer unix.Close(p[0])
			defer unix.Close(p[1])
			unix.Write(p[1], []byte("abc"))
			n, err := unix.IoctlGetInt(p[0], 0x541B) // FIONREAD
			if err == nil && n != 3 {
				return 0, fmt.Errorf("FIONREAD = %d, want 3", n)
			}
			return errnoOf(err)
		}},

		probe{name: "socket/inet-raw-icmp", call: raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), want: unix.EPERM, discriminating: true, needsRoot: true},
		probe{name: "socket/inet-raw-cloexec", call: raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_RAW), want: unix.EPERM, discriminating: true, needsRoot: true},
		probe{name: "socket/inet6-raw", call: raw(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6), want: unix.EPERM},
		probe{name: "socket/packet-raw", call: raw(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0x0300), want: unix.EPERM, discriminating: true, needsRoot: true},
		probe{name: "socket/packet-dgram", call: raw(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_DGRAM, 0), want: unix.EPERM, discriminating: true, needsRoot: true},
		probe{name: "socket/inet-packet", call: raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_PACKET, 0), want: unix.EPERM, discriminating: true, needsRoot: true},
		probe{name: "socket/alg", call: raw(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET, 0), want: unix.EAFNOSUPPORT},
		probe{name: "socket/inet-stream", call: raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)},
		probe{name: "socket/inet-dgram", call: raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0)},
		probe{name: "socket/unix-stream", call: raw(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)},
		probe{name: "socket/netlink-route-raw", call: raw(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)},

		probe{name: "personality/query", call: raw(unix.SYS_PERSONALITY, 0xffffffff)},
		probe{name: "personality/addr-no-randomize", call: raw(unix.SYS_PERSONALITY, 0x0040000), want: unix.EPERM, discriminating: true},

		probe{name: "allowed/getrandom", call: func(string) (unix.Errno, error) {
			b := make([]byte, 16)
			_, err := unix.Getrandom(b, 0)
			return errnoOf(err)
		}},
		probe{name: "allowed/memfd_create", call: func(string) (unix.Errno, error) {
			fd, err := unix.MemfdCreate("probe", unix.MFD_CLOEXEC)
			if err == nil {
				unix.Close(fd)
			}
			return errnoOf(err)
		}},
		probe{name: "allowed/pidfd_open-self", call: raw(unix.SYS_PIDFD_OPEN, uintptr(os.Getpid()), 0)},
		probe{name: "allowed/landlock-abi-version", call: raw(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)},
		probe{name: "allowed/prlimit", call: func(string) (unix.Errno, error) {
			var r unix.Rlimit
			return errnoOf(unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &r))
		}},
		probe{name: "allowed/file-io", call: fileIO},
		probe{name: "allowed/net-interfaces", call: func(string) (unix.Errno, error) {
			ifs, err := net.Interfaces() // netlink RIB dump on this thread
			if err == nil && len(ifs) == 0 {
				return 0, errors.New("no interfaces")
			}
			return errnoOf(err)
		}},
		probe{name: "allowed/tcp-loopback", call: tcpLoopback},
		// Last: in the probes-native run this installs the first filter.
		probe{name: "allowed/stacked-seccomp", call: func(string) (unix.Errno, error) {
			prog, err := Program()
			if err != nil {
				return 0, err
			}
			return errnoOf(InstallThread(prog))
		}},
	)
	return ps
}

func fileIO(tmp string) (unix.Errno, error) {
	dir := filepath.Join(tmp, "fileio")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		return errnoOf(err)
	}
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("hello seccomp\n"), 0o644); err != nil {
		return errnoOf(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return errnoOf(err)
	}
	if _, err := f.WriteString("more\n"); err != nil {
		f.Close()
		return errnoOf(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return errnoOf(err)
	}
	f.Close()
	if err := os.Rename(p, filepath.Join(dir, "sub", "b.txt")); err != nil {
		return errnoOf(err)
	}
	if err := os.Symlink("sub/b.txt", filepath.Join(dir, "link")); err != nil {
		return errnoOf(err)
	}
	if err := os.Chmod(filepath.Join(dir, "sub", "b.txt"), 0o600); err != nil {
		return errnoOf(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "link"))
	if err != nil {
		return errnoOf(err)
	}
	if string(got) != "hello seccomp\nmore\n" {
		return 0, fmt.Errorf("read back %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "b.txt")); err != nil {
		return errnoOf(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return errnoOf(err)
	}
	if len(ents) != 2 {
		return 0, fmt.Errorf("readdir: %d entries", len(ents))
	}
	return errnoOf(os.RemoveAll(dir))
}

func tcpLoopback(string) (unix.Errno, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return errnoOf(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(c, io.LimitReader(c, 4))
		done <- err
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		return errnoOf(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return errnoOf(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return errnoOf(err)
	}
	if string(buf) != "ping" {
		return 0, fmt.Errorf("echo %q", buf)
	}
	return errnoOf(<-done)
}

// execSpec describes a command the child starts from its filtered thread.
type execSpec struct {
	Argv    []string `json:"argv"`
	Dir     string   `json:"dir,omitempty"`
	Env     []string `json:"env,omitempty"` // added to the inherited environment
	UID     *uint32  `json:"uid,omitempty"` // with GID: SysProcAttr.Credential
	GID     uint32   `json:"gid,omitempty"`
	Setsid  bool     `json:"setsid,omitempty"`
	ForkAPI string   `json:"forkAPI,omitempty"` // "os" (os/exec, default) or "syscall" (syscall.ForkExec)
	Timeout int      `json:"timeout,omitempty"` // seconds
}

type execResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
	Signal   string `json:"signal,omitempty"`
	Err      string `json:"err,omitempty"`
	// Seccomp mode of the starting thread, read from /proc/thread-self.
	ParentSeccomp string `json:"parentSeccomp"`
}

// TestHelperFiltered is the child side. It does nothing in a normal run.
func TestHelperFiltered(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for the TestFiltered* tests")
	}
	// Never unlocked: when this goroutine ends, the runtime discards the
	// filtered thread instead of reusing it.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_NO_NEW_PRIVS: %v", err)
	}
	if mode != "probes-native" {
		prog, err := Program()
		if err != nil {
			t.Fatalf("Program: %v", err)
		}
		if err := InstallThread(prog); err != nil {
			t.Fatalf("InstallThread: %v", err)
		}
	}
	tmp := os.Getenv(helperTmpEnv)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	emit := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "%s%s\n", resultPrefix, b)
	}
	switch mode {
	case "probes", "probes-native":
		for _, p := range probes() {
			e, err := p.call(tmp)
			r := probeResult{Name: p.name, Errno: int(e)}
			if err != nil {
				r.Err = err.Error()
			}
			emit(r)
		}
	case "exec":
		var spec execSpec
		if err := json.Unmarshal([]byte(os.Getenv(helperExec)), &spec); err != nil {
			t.Fatalf("bad exec spec: %v", err)
		}
		emit(runSpec(spec))
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
}

func threadSeccompMode() string {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return err.Error()
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func runSpec(spec execSpec) (res execResult) {
	res.ParentSeccomp = threadSeccompMode()
	timeout := time.Duration(max(spec.Timeout, 60)) * time.Second
	attr := &syscall.SysProcAttr{Setsid: spec.Setsid}
	if spec.UID != nil {
		attr.Credential = &syscall.Credential{Uid: *spec.UID, Gid: spec.GID}
	}
	env := append(os.Environ(), spec.Env...)
	var stdout, stderr bytes.Buffer
	var err error
	switch spec.ForkAPI {
	case "", "os":
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, spec.Argv[0], spec.Argv[1:]...)
		cmd.Dir, cmd.Env, cmd.SysProcAttr = spec.Dir, env, attr
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		if cmd.ProcessState != nil {
			fillStatus(&res, cmd.ProcessState.Sys().(syscall.WaitStatus))
			if _, ok := err.(*exec.ExitError); ok {
				err = nil
			}
		}
	case "syscall":
		err = forkExecRaw(spec, attr, env, timeout, &res, &stdout, &stderr)
	default:
		err = fmt.Errorf("unknown fork API %q", spec.ForkAPI)
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if err != nil {
		res.Err = err.Error()
	}
	return res
}

func fillStatus(res *execResult, ws syscall.WaitStatus) {
	res.ExitCode = ws.ExitStatus()
	if ws.Signaled() {
		res.Signal = unix.SignalName(ws.Signal())
	}
}

// forkExecRaw starts the command with syscall.ForkExec and reaps it with
// wait4, all on the calling (filtered) thread.
func forkExecRaw(spec execSpec, attr *syscall.SysProcAttr, env []string, timeout time.Duration, res *execResult, stdout, stderr *bytes.Buffer) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	pid, err := syscall.ForkExec(spec.Argv[0], spec.Argv, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   env,
		Files: []uintptr{devnull.Fd(), outW.Fd(), errW.Fd()},
		Sys:   attr,
	})
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	copied := make(chan struct{}, 2)
	go func() { io.Copy(stdout, outR); outR.Close(); copied <- struct{}{} }()
	go func() { io.Copy(stderr, errR); errR.Close(); copied <- struct{}{} }()
	timer := time.AfterFunc(timeout, func() { syscall.Kill(pid, syscall.SIGKILL) })
	defer timer.Stop()
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	<-copied
	<-copied
	if err != nil {
		return err
	}
	fillStatus(res, ws)
	return nil
}

// runHelper starts the child in the given mode and returns the JSON
// payloads of its RESULT lines.
func runHelper(t *testing.T, mode string, env ...string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFiltered$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperTmpEnv+"="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	// Own session without a controlling terminal: vhangup and TIOCSTI could
	// touch nothing even if the filter failed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var payloads []string
	for line := range strings.Lines(stdout.String()) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), resultPrefix); ok {
			payloads = append(payloads, p)
		}
	}
	if err != nil || len(payloads) == 0 {
		t.Fatalf("helper %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, stdout.String(), stderr.String())
	}
	return payloads
}

func runProbes(t *testing.T, mode string) map[string]probeResult {
	t.Helper()
	got := map[string]probeResult{}
	for _, p := range runHelper(t, mode) {
		var r probeResult
		if err := json.Unmarshal([]byte(p), &r); err != nil {
			t.Fatalf("bad result %q: %v", p, err)
		}
		got[r.Name] = r
	}
	return got
}

func errnoString(e int) string {
	if e == 0 {
		return "success"
	}
	return unix.ErrnoName(unix.Errno(e))
}

func TestFilteredSyscalls(t *testing.T) {
	got := runProbes(t, "probes")
	for _, p := range probes() {
		r, ok := got[p.name]
		if !ok {
			t.Errorf("%s: no result", p.name)
			continue
		}
		if r.Err != "" && p.want == 0 {
			t.Errorf("%s: %s", p.name, r.Err)
		}
		if unix.Errno(r.Errno) != p.want {
			t.Errorf("%s: got %s, want %s %s", p.name, errnoString(r.Errno), errnoString(int(p.want)), r.Err)
		}
	}
	if len(got) != len(probes()) {
		t.Errorf("got %d results for %d probes", len(got), len(probes()))
	}
}

// TestProbesDiscriminate runs the same probes without the filter and
// checks that the filtered expectations are not what the kernel would say
// anyway, so TestFilteredSyscalls really tests the filter.
func TestProbesDiscriminate(t *testing.T) {
	root := unix.Geteuid() == 0 && hasCap(unix.CAP_NET_RAW)
	got := runProbes(t, "probes-native")
	sameAsFiltered := 0
	for _, p := range probes() {
		r := got[p.name]
		if unix.Errno(r.Errno) == p.want {
			sameAsFiltered++
			if p.discriminating && (root || !p.needsRoot) {
				t.Errorf("%s: unfiltered result %s equals the filtered expectation", p.name, errnoString(r.Errno))
			}
		}
	}
	t.Logf("%d of %d probes give the same result without the filter (successes and ENOSYS mostly)", sameAsFiltered, len(probes()))
}

func hasCap(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<c) != 0
		}
	}
	return false
}

// runFiltered runs spec from the filtered thread of a helper child.
func runFiltered(t *testing.T, spec execSpec) execResult {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	payloads := runHelper(t, "exec", helperExec+"="+string(b))
	var res execResult
	if err := json.Unmarshal([]byte(payloads[0]), &res); err != nil {
		t.Fatalf("bad result %q: %v", payloads[0], err)
	}
	if res.ParentSeccomp != "2" {
		t.Fatalf("starting thread is not in seccomp filter mode: %q", res.ParentSeccomp)
	}
	return res
}

// mustSucceed asserts a zero exit and returns stdout.
func mustSucceed(t *testing.T, spec execSpec) string {
	t.Helper()
	res := runFiltered(t, spec)
	if res.Err != "" || res.ExitCode != 0 || res.Signal != "" {
		t.Fatalf("%q under the filter: err=%q exit=%d signal=%s\nstdout:\n%s\nstderr:\n%s",
			spec.Argv, res.Err, res.ExitCode, res.Signal, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed: %v", name, err)
	}
	return p
}

const shellWorkload = `echo ok
ls / >/dev/null
ls / | wc -l >/dev/null
cat /etc/hostname >/dev/null 2>&1 || cat /etc/os-release >/dev/null
x=$(echo sub; echo shell) && echo "$x" | tr a-z A-Z >/dev/null
grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs):' /proc/self/status
echo "sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$"
id -u`

func checkShell(t *testing.T, out string, wantUID string, wantSetsid bool) {
	t.Helper()
	for _, want := range []string{"ok\n", "Seccomp:\t2\n", "NoNewPrivs:\t1\n", "\n" + wantUID + "\n"} {
		if !strings.Contains("\n"+out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if wantSetsid {
		var sid, pid int
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "sid=") {
				fmt.Sscanf(line, "sid=%d pid=%d", &sid, &pid)
			}
		}
		if sid == 0 || sid != pid {
			t.Errorf("shell is not a session leader: sid=%d pid=%d", sid, pid)
		}
	}
}

func TestFilteredForkExec(t *testing.T) {
	sh := lookTool(t, "sh")
	t.Run("os.StartProcess", func(t *testing.T) {
		t.Parallel()
		out := mustSucceed(t, execSpec{Argv: []string{sh, "-c", shellWorkload}})
		checkShell(t, out, strconv.Itoa(os.Geteuid()), false)
	})
	t.Run("syscall.ForkExec", func(t *testing.T) {
		t.Parallel()
		out := mustSucceed(t, execSpec{Argv: []string{sh, "-c", shellWorkload}, ForkAPI: "syscall", Setsid: true, Dir: "/"})
		checkShell(t, out, strconv.Itoa(os.Geteuid()), true)
	})
	t.Run("credential-65534-setsid", func(t *testing.T) {
		testroot.Need(t, "to run a command as another uid")
		t.Parallel()
		uid := uint32(65534)
		out := mustSucceed(t, execSpec{Argv: []string{sh, "-c", shellWorkload}, UID: &uid, GID: 65534, Setsid: true, Dir: "/"})
		checkShell(t, out, "65534", true)
	})
	t.Run("agent-pattern-1000", func(t *testing.T) {
		// What the in-sandbox agent does: uid/gid 1000, new session, a
		// working directory, through syscall.ForkExec and os.StartProcess.
		testroot.Need(t, "to run a command as another uid")
		t.Parallel()
		// t.TempDir's parent is private to root; uid 1000 needs a path it
		// can traverse.
		dir, err := os.MkdirTemp("", "airlock-seccomp-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		uid := uint32(1000)
		for _, api := range []string{"os", "syscall"} {
			out := mustSucceed(t, execSpec{
				Argv: []string{sh, "-c", shellWorkload + "\npwd; echo hi >f && cat f && rm f"},
				UID:  &uid, GID: 1000, Setsid: true, Dir: dir, ForkAPI: api,
			})
			checkShell(t, out, "1000", true)
			if !strings.Contains(out, dir+"\nhi\n") {
				t.Errorf("%s: pwd/file output wrong:\n%s", api, out)
			}
		}
	})
	t.Run("namespaces-denied-in-children", func(t *testing.T) {
		t.Parallel()
		unshare := lookTool(t, "unshare")
		res := runFiltered(t, execSpec{Argv: []string{unshare, "--user", "--map-root-user", "true"}})
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "Operation not permitted") {
			t.Errorf("unshare --user under the filter: exit=%d stderr=%q, want EPERM failure", res.ExitCode, res.Stderr)
		}
	})
}

func TestFilteredDeveloperTools(t *testing.T) {
	t.Run("git", func(t *testing.T) {
		t.Parallel()
		git := lookTool(t, "git")
		if out := mustSucceed(t, execSpec{Argv: []string{git, "--version"}}); !strings.HasPrefix(out, "git version") {
			t.Errorf("git --version: %q", out)
		}
		dir := t.TempDir()
		out := mustSucceed(t, execSpec{
			Argv: []string{"/bin/sh", "-c", `set -e
git init -q repo && cd repo
echo hello > a.txt && git add a.txt
git -c user.name=t -c user.email=t@example.com commit -qm first
git log --oneline | wc -l
git status --porcelain | wc -l`},
			Dir: dir, Env: []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"},
		})
		if f := strings.Fields(out); len(f) != 2 || f[0] != "1" || f[1] != "0" {
			t.Errorf("git workflow output %q", out)
		}
	})
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		goBin := "/usr/local/go/bin/go"
		if _, err := os.Stat(goBin); err != nil {
			goBin = lookTool(t, "go")
		}
		if out := mustSucceed(t, execSpec{Argv: []string{goBin, "version"}}); !strings.HasPrefix(out, "go version go") {
			t.Errorf("go version: %q", out)
		}
		if testing.Short() {
			t.Skip("go build skipped in -short mode")
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import (
	"fmt"
	"os/exec"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done() }()
	}
	wg.Wait()
	out, err := exec.Command("echo", "child").Output()
	fmt.Printf("hello %s %v\n", out, err)
}
`), 0o644)
		out := mustSucceed(t, execSpec{
			Argv:    []string{"/bin/sh", "-c", goBin + " build -o hello . && ./hello"},
			Dir:     dir,
			Env:     []string{"GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0"},
			Timeout: 300,
		})
		if !strings.Contains(out, "hello child\n <nil>") {
			t.Errorf("go build/run output %q", out)
		}
	})
	t.Run("python3", func(t *testing.T) {
		t.Parallel()
		py := lookTool(t, "python3")
		if out := mustSucceed(t, execSpec{Argv: []string{py, "-c", "print(1)"}}); strings.TrimSpace(out) != "1" {
			t.Errorf("python3 print: %q", out)
		}
		out := mustSucceed(t, execSpec{Argv: []string{py, "-c", `
import subprocess, threading, socket, ctypes
r = []
t = threading.Thread(target=lambda: r.append(subprocess.run(["echo", "sub"], capture_output=True, text=True).stdout.strip()))
t.start(); t.join()
a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
libc = ctypes.CDLL(None, use_errno=True)
rc = libc.unshare(0x10000000)  # CLONE_NEWUSER
print("unshare denied" if rc != 0 and ctypes.get_errno() == 1 else "unshare rc=%d errno=%d" % (rc, ctypes.get_errno()))
print(r[0])
`}})
		if out != "unshare denied\nsub\n" {
			t.Errorf("python3 workload: %q", out)
		}
	})
	t.Run("node", func(t *testing.T) {
		t.Parallel()
		node := lookTool(t, "node")
		dir := t.TempDir()
		out := mustSucceed(t, execSpec{Argv: []string{node, "-e", `
const fs = require('fs'), cp = require('child_process'), path = require('path');
const f = path.join(process.argv[1], 'x.txt');
fs.promises.writeFile(f, 'async-io').then(() => fs.promises.readFile(f, 'utf8')).then(s => {
  console.log(s, cp.execSync('echo child').toString().trim(), 1 + 1);
});
`, dir}})
		if out != "async-io child 2\n" {
			t.Errorf("node workload: %q", out)
		}
	})
	t.Run("gcc-make", func(t *testing.T) {
		t.Parallel()
		lookTool(t, "gcc")
		makeBin := lookTool(t, "make")
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "hello.c"), []byte("#include <stdio.h>\nint main(void){puts(\"c ok\");return 0;}\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "Makefile"), []byte("hello: hello.c\n\tgcc -O2 -o $@ $<\nrun: hello\n\t./hello\n"), 0o644)
		out := mustSucceed(t, execSpec{Argv: []string{makeBin, "-s", "run"}, Dir: dir})
		if out != "c ok\n" {
			t.Errorf("make/gcc: %q", out)
		}
	})
}

// TestFilteredForeignArchKilled issues an i386 syscall (int 0x80) from a
// process started under the filter: the filter must kill it with SIGSYS.
func TestFilteredForeignArchKilled(t *testing.T) {
	gcc := lookTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "int80.c")
	bin := filepath.Join(dir, "int80")
	os.WriteFile(src, []byte(`#include <stdio.h>
int main(void) {
	long r = 20; /* i386 getpid */
	__asm__ volatile ("int $0x80" : "+a"(r) : : "memory", "r8", "r9", "r10", "r11");
	printf("%ld\n", r);
	return 0;
}
`), 0o644)
	if out, err := exec.Command(gcc, "-O0", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	// Without the filter the call must work, or the kernel lacks ia32
	// emulation and there is nothing to test.
	if out, err := exec.Command(bin).Output(); err != nil {
		t.Skipf("int 0x80 does not work without the filter here (no ia32 emulation?): %v", err)
	} else if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n <= 0 {
		t.Skipf("int 0x80 getpid returned %q without the filter", out)
	}
	res := runFiltered(t, execSpec{Argv: []string{"/bin/sh", "-c", "ulimit -c 0; exec " + bin}})
	if res.Signal != "SIGSYS" {
		t.Fatalf("i386 syscall under the filter: exit=%d signal=%q stdout=%q, want death by SIGSYS", res.ExitCode, res.Signal, res.Stdout)
	}
}
