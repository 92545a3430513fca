package fake

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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
