package fake

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/conformance"
	"github.com/airlock-dev/airlock/internal/testroot"
)

// The fake passes the suite as a normal user would run it: nothing in
// it needs root.
func TestConformance(t *testing.T) {
	conformance.RunWith(t, func(t *testing.T) (runtime.Backend, runtime.Spec) {
		return New(t.TempDir()), runtime.Spec{RootFS: t.TempDir()}
	}, conformance.Differences{
		conformance.NoIsolation: "the fake backend is for tests only: its commands are host processes of the calling user, on the host's files, /proc, devices and network",
		"PtyLimit":              "the fake's terminals are the host's and it has no per-sandbox maximum: a pty limit is ErrUnsupported",
		"DiskUsage":             "the fake has no disk of its own (its files are in a host directory, and a disk limit is refused): it is no DiskMeter",
	})
}

// What the fake cannot enforce is refused, never silently dropped.
func TestRefusesWhatItCannotEnforce(t *testing.T) {
	b := New(t.TempDir())
	for name, l := range map[string]runtime.Limits{
		"memory": {MemoryBytes: 1 << 30}, "pids": {Pids: 64}, "cpus": {CPUs: 1}, "disk": {DiskBytes: 1 << 30},
		"tmp": {TmpBytes: 1 << 20}, "inodes": {Inodes: 100}, "nofile": {NoFile: 64}, "ptys": {Ptys: 4},
	} {
		sb, err := b.Create(context.Background(), runtime.Spec{RootFS: t.TempDir(), Limits: l})
		if err == nil {
			_ = sb.Destroy(context.Background())
		}
		if !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("a %s limit: %v, want unsupported", name, err)
		}
	}
	if _, err := b.Create(context.Background(), runtime.Spec{RootFS: t.TempDir(), Network: nullNet{}}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("a network: %v, want unsupported", err)
	}
}

type nullNet struct{}

func (nullNet) ProxyConn(c net.Conn, _ int)                      { c.Close() }
func (nullNet) DNS(context.Context, []byte, int) ([]byte, error) { return nil, errors.New("none") }

// Destroy leaves no process the sandbox started (what left its session
// too) and no file, and the file API of a destroyed sandbox fails
// rather than reaching whatever reuses its descriptor.
func TestDestroyLeavesNothing(t *testing.T) {
	ctx := context.Background()
	sb, err := New(t.TempDir()).Create(ctx, runtime.Spec{RootFS: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := sb.(*sandbox)
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"sh", "-c", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(pidsWith(s.marker())) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(pidsWith(s.marker())); n < 3 {
		t.Fatalf("%d processes of the sandbox, want the shell and two sleeps", n)
	}
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := p.Wait(ctx); err != nil || st.Signal != "SIGKILL" {
		t.Errorf("the command after Destroy: %+v %v", st, err)
	}
	if left := pidsWith(s.marker()); len(left) != 0 {
		t.Errorf("processes %v outlive Destroy", left)
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sandbox's directory outlives Destroy: %v", err)
	}
	if _, err := sb.(runtime.Files).Stat(ctx, "/workspace"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("stat in a destroyed sandbox: %v, want a conflict", err)
	}
}

// The fake is no boundary: the daemon and the CLI must not be able to
// select it, so the airlock binary does not even link it.
func TestNotInTheDaemon(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testroot.Unavailable(t, "no go command to list the daemon's packages with")
	}
	out, err := exec.Command("go", "list", "-deps", "../../../cmd/airlock").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "internal/runtime/native\n") {
		t.Fatalf("go list names no native backend: the check proves nothing:\n%s", out)
	}
	if strings.Contains(string(out), "internal/runtime/fake\n") {
		t.Error("cmd/airlock links the fake backend, which isolates nothing")
	}
}

// Dash runs each command by vfork. A SIGSTOP that lands on the child
// before its exec leaves the parent in the kernel (state D), where it
// never reaches state T: Pause once waited out its deadline on it. The
// test holds a vfork child before its exec with ptrace, as that SIGSTOP
// would, and pauses the sandbox around it.
func TestPauseHoldsAVforkParent(t *testing.T) {
	ctx := context.Background()
	b := New(t.TempDir())
	sb, err := b.Create(ctx, runtime.Spec{RootFS: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sb.Destroy(ctx) }()
	parent, child := heldVfork(t, sb.(*sandbox).marker())
	defer func() { _ = unix.Kill(child, unix.SIGKILL); _ = unix.Kill(parent, unix.SIGKILL) }()
	if s := state(parent); s != 'D' {
		t.Fatalf("the vfork parent is in state %q, not D", s)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := sb.(runtime.Pauser).Pause(pctx); err != nil {
		t.Fatalf("pause with a vfork parent held by its child: %v", err)
	}
}

// heldVfork starts sh (with the sandbox's marker) under ptrace and
// holds its first vfork child in a trace stop before the child's exec.
func heldVfork(t *testing.T, marker string) (parent, child int) {
	goruntime.LockOSThread() // ptrace requests come from the tracing thread
	t.Cleanup(goruntime.UnlockOSThread)
	cmd := exec.Command("/bin/sh", "-c", "/bin/true; exec sleep 60")
	cmd.Env = append(os.Environ(), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	parent = cmd.Process.Pid
	var ws unix.WaitStatus
	if _, err := unix.Wait4(parent, &ws, 0, nil); err != nil || !ws.Stopped() {
		t.Fatalf("sh did not stop at its exec: %v %v", err, ws)
	}
	if err := unix.PtraceSetOptions(parent, unix.PTRACE_O_TRACEVFORK); err != nil {
		t.Fatal(err)
	}
	if err := unix.PtraceCont(parent, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Wait4(parent, &ws, 0, nil); err != nil || ws.TrapCause() != unix.PTRACE_EVENT_VFORK {
		t.Fatalf("sh did not vfork: %v %v", err, ws)
	}
	msg, err := unix.PtraceGetEventMsg(parent)
	if err != nil {
		t.Fatal(err)
	}
	child = int(msg)
	if _, err := unix.Wait4(child, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the vfork child did not stop: %v %v", err, ws)
	}
	if err := unix.PtraceCont(parent, 0); err != nil { // into the vfork wait
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); state(parent) != 'D'; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	return parent, child
}
