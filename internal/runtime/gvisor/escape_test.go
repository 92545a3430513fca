package gvisor

// The escape suite under gVisor: the hostile probe of the native suite
// (../native/testdata/probe, one JSON line per case) runs inside gVisor
// sandboxes, and every test asserts that the action is denied. The cases
// are those of the native escape tests that apply to this boundary; where
// gVisor behaves differently, the test says so and checks the difference
// (never a silent skip):
//   - errno: gVisor's kernel answers some refused calls itself (ENOSYS for
//     what it does not implement, such as kexec, modules or io_uring, and
//     EPERM/EACCES where Linux would), so the accepted errnos are wider;
//   - memory: the host can only OOM-kill gVisor's kernel, so a memory
//     limit hit ends the whole sandbox, and Wait reports LimitMemory;
//   - processes: RLIMIT_NPROC, enforced by gVisor's kernel, contains a
//     fork bomb, but the host has no counter to name the hit.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

type probeResult struct {
	Case   string `json:"case"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno"`
	Detail string `json:"detail"`
	N      int64  `json:"n"`
}

// withProbe puts the hostile probe binary at /workspace/probe.
func withProbe(t testing.TB) func(*runtime.Spec) {
	t.Helper()
	needGVisor(t) // the probe is built only where the gVisor tests run
	if probeBin == "" {
		t.Fatal("the probe binary could not be built")
	}
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	data, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(s *runtime.Spec) { s.Workspace = dir }
}

func probe(t testing.TB, sb runtime.Sandbox, args ...string) probeResult {
	t.Helper()
	res := run(t, sb, runtime.ExecRequest{Argv: append([]string{"/workspace/probe"}, args...)})
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var pr probeResult
		if json.Unmarshal([]byte(strings.TrimSpace(lines[i])), &pr) == nil && pr.Case != "" {
			return pr
		}
	}
	t.Fatalf("probe %q printed no result: %+v", args, res)
	return probeResult{}
}

// legacy: the runsc under test is gVisor before 2023 (Debian 12's).
func legacy(t testing.TB) bool {
	b := newTestBackend(t)
	return b.Legacy()
}

// gvisorProcs counts the sandbox's processes as gVisor's kernel sees them
// (runsc ps), from the host.
func gvisorProcs(t testing.TB, sb runtime.Sandbox) int {
	t.Helper()
	s := sb.(*sandbox)
	out, err := exec.Command(s.b.runsc, "--root", filepath.Join(s.dir, "runsc"), "ps", "--format", "json", s.id).Output()
	if err != nil {
		return 0
	}
	var ps []json.RawMessage
	if json.Unmarshal(out, &ps) != nil {
		return 0
	}
	return len(ps)
}

func denied(t testing.TB, pr probeResult, accepted ...string) {
	t.Helper()
	if pr.OK {
		t.Errorf("ESCAPE: hostile action succeeded: %+v", pr)
		return
	}
	if len(accepted) > 0 && !slices.Contains(accepted, pr.Errno) {
		t.Errorf("%s: refused with %s (%s), want one of %v", pr.Case, pr.Errno, pr.Detail, accepted)
	}
}

// gVisor refuses some calls with another errno than Linux (see above).
var (
	errNo      = []string{"EPERM", "EACCES", "ENOSYS", "EINVAL", "EOPNOTSUPP"}
	errFSDenid = []string{"EACCES", "EPERM", "EROFS"}
)

// Commands hold no capability, cannot gain one, cannot become root, and
// every call that reaches past the sandbox is refused.
func TestEscapeCredentialsAndSyscalls(t *testing.T) {
	sb := newSandbox(t, withProbe(t))
	r := sh(t, sb, `cat /proc/self/status`)
	status := map[string]string{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	for k, want := range map[string]string{
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "Seccomp": "2",
	} {
		if status[k] != want {
			t.Errorf("/proc/self/status %s = %q, want %q", k, status[k], want)
		}
	}
	if pr := probe(t, sb, "ids"); pr.Detail != "uid=1000,1000,1000 gid=1000,1000,1000 groups=[]" {
		t.Errorf("ids: %+v", pr)
	}
	for _, c := range []string{
		"setuid", "setresuid", "setgid", "setgroups", "capset",
		"mount", "mount-proc", "pivot_root", "chroot", "fsopen", "open_tree",
		"unshare-user", "unshare-mount", "unshare-net", "clone-newuser", "clone-newns", "setns",
		"ptrace-traceme", "process_vm_readv", "bpf", "perf_event_open", "keyctl", "add_key",
		"userfaultfd", "io_uring_setup", "init_module", "finit_module", "kexec_load", "reboot",
		"swapon", "sethostname", "clock_settime", "syslog", "iopl", "ioperm",
		"socket-raw", "socket-packet", "socket-vsock",
	} {
		denied(t, probe(t, sb, c), append(errNo, "EAFNOSUPPORT", "ESOCKTNOSUPPORT", "EPROTONOSUPPORT")...)
	}
	// the agent is out of reach
	denied(t, probe(t, sb, "kill", "1"), errNo...)
	denied(t, probe(t, sb, "ptrace-attach", "1"), errNo...)
	denied(t, probe(t, sb, "open-write", "/proc/1/exe"), append(errFSDenid, "ENOENT", "ETXTBSY")...)
	denied(t, probe(t, sb, "open-write", agentPath), append(errFSDenid, "ETXTBSY")...)
	// gVisor before 2023 (Debian 12's runsc) lets any process read the
	// agent's memory map and environment, non-dumpable or not: a
	// documented difference (nothing there is secret: the airlock binary's
	// map; PATH and HOME). A current runsc refuses.
	for _, f := range []string{"/proc/1/environ", "/proc/1/maps"} {
		if pr := probe(t, sb, "read", f); legacy(t) && pr.OK {
			t.Logf("documented difference of gVisor before 2023: %s is readable", f)
		} else {
			denied(t, pr, append(errFSDenid, "ENOENT")...)
		}
	}
	// a command's terminal cannot be fed keystrokes of another session
	denied(t, probe(t, sb, "tiocsti-stdin"), append(errNo, "ENOTTY", "EIO")...)
	// only its own stdio reaches a command
	if pr := probe(t, sb, "fds"); pr.N > 4 {
		t.Errorf("a command holds more descriptors than its stdio: %s", pr.Detail)
	}
}

// Nothing of the host's files is visible or writable; gVisor's /proc shows
// only the sandbox.
func TestEscapeFilesystem(t *testing.T) {
	host := t.TempDir()
	canary := filepath.Join(host, "canary")
	if err := os.WriteFile(canary, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	usrBefore, _ := os.ReadFile("/usr/share/base-files/motd")
	sb := newSandbox(t, withProbe(t))
	denied(t, probe(t, sb, "read", canary), "ENOENT")
	for _, p := range []string{"/usr/share/base-files/motd", "/etc/passwd", "/usr/bin/sh"} {
		denied(t, probe(t, sb, "open-write", p), errFSDenid...)
	}
	denied(t, probe(t, sb, "create", "/usr/airlock-escape"), errFSDenid...)
	if b, _ := os.ReadFile("/usr/share/base-files/motd"); string(b) != string(usrBefore) {
		t.Error("the host's /usr changed")
	}
	r := sh(t, sb, "find /proc -maxdepth 1 -name '[0-9]*' | wc -l; cat /proc/1/cmdline | tr '\\0' ' '; echo")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if n, _ := strconv.Atoi(lines[0]); n == 0 || n > 10 {
		t.Errorf("/proc lists %d processes: the host's? %q", n, r.Stdout)
	}
	if len(lines) < 2 || !strings.Contains(lines[1], agentPath) {
		t.Errorf("pid 1 is not the agent: %q %q", r.Stdout, r.Stderr)
	}
	// devices: only the harmless ones
	for _, dev := range []string{"/dev/mem", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/kvm", "/dev/loop0"} {
		denied(t, probe(t, sb, "open", dev), "ENOENT", "EACCES", "EPERM")
	}
	// gVisor before 2023 lets anyone make a device node; the commands'
	// seccomp filter refuses it on every runsc.
	denied(t, probe(t, sb, "mknod-char", "/tmp/mem", "1", "1"), errNo...)
	denied(t, probe(t, sb, "mknod-block", "/tmp/vda"), errNo...)
}

// The sandbox has loopback only: the host's loopback services are out of
// reach (the sandbox's 127.0.0.1 is gVisor's own), and so is every
// other address.
func TestEscapeNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("host loopback secret"))
			c.Close()
		}
	}()
	sb := newSandbox(t, withProbe(t))
	r := sh(t, sb, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
	if strings.TrimSpace(r.Stdout) != "lo" {
		t.Errorf("interfaces: %q, want lo only", r.Stdout)
	}
	pr := probe(t, sb, "tcp-connect", ln.Addr().String())
	denied(t, pr, "ECONNREFUSED", "ENETUNREACH", "ETIMEDOUT", "EHOSTUNREACH")
	if strings.Contains(pr.Detail, "secret") {
		t.Errorf("ESCAPE: reached the host's loopback: %+v", pr)
	}
}

// Resource limits under gVisor.
func TestEscapeResources(t *testing.T) {
	t.Run("ForkBomb", func(t *testing.T) {
		// RLIMIT_NPROC, counted by gVisor's kernel, stops the bomb; the
		// host has no counter to name the hit (a documented difference),
		// so the test counts with runsc ps, which asks gVisor's kernel.
		const pids = 64
		sb := newSandbox(t, func(s *runtime.Spec) { s.Limits.Pids = pids })
		bomb := make(chan result, 1)
		go func() {
			bomb <- run(t, sb, runtime.ExecRequest{Argv: []string{"/bin/bash", "-c", "f(){ f & f & sleep 30; }; f"}, Timeout: 3 * time.Second})
		}()
		peak := 0
		for done := false; !done; {
			select {
			case r := <-bomb:
				done = true
				if r.Status.Limit != runtime.LimitTimeout {
					t.Errorf("the bomb: %+v, want it ended by its timeout", r.Status)
				}
			case <-time.After(200 * time.Millisecond):
				peak = max(peak, gvisorProcs(t, sb))
			}
		}
		// the agent, and a few of the bomb's that exited but are not yet reaped
		if peak == 0 || peak > pids+8 {
			t.Errorf("processes in gVisor during the bomb peaked at %d, want at most the limit of %d (+ the agent)", peak, pids)
		}
		t.Logf("peak %d processes under a limit of %d", peak, pids)
		var after result
		for try := 0; try < 50; try++ {
			if after = sh(t, sb, "echo alive | cat"); strings.Contains(after.Stdout, "alive") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !strings.Contains(after.Stdout, "alive") {
			t.Errorf("sandbox unusable after the bomb: %+v", after)
		}
	})
	t.Run("Memory", func(t *testing.T) {
		// The host OOM-kills gVisor's kernel: the sandbox ends, and the
		// command's status names the limit.
		withP := withProbe(t)
		sb := newSandbox(t, func(s *runtime.Spec) { withP(s); s.Limits.MemoryBytes = 128 << 20 })
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/workspace/probe", "alloc", "600"}})
		if errors.Is(err, ErrStopped) {
			t.Fatal("sandbox stopped before the command started")
		}
		if err != nil {
			t.Fatal(err)
		}
		st, err := p.Wait(ctx)
		if err != nil || st.Limit != runtime.LimitMemory {
			t.Errorf("allocation over the memory limit: %+v %v, want the memory limit named", st, err)
		}
		select {
		case <-sb.Done():
		case <-time.After(10 * time.Second):
			t.Error("the sandbox lives on after its kernel was OOM-killed")
		}
	})
	t.Run("Disk", func(t *testing.T) {
		sb := newSandbox(t, func(s *runtime.Spec) { s.Limits.DiskBytes = 32 << 20 })
		r := sh(t, sb, "dd if=/dev/zero of=/workspace/fill bs=1M count=64")
		if r.Status.Limit != runtime.LimitDisk || !strings.Contains(r.Stderr, "No space left") {
			t.Errorf("filling the disk: %+v, want the disk limit", r)
		}
		r = sh(t, sb, "rm /workspace/fill && echo x > /workspace/after && cat /workspace/after")
		if r.Stdout != "x\n" {
			t.Errorf("sandbox unusable after the disk filled: %+v", r)
		}
	})
}
