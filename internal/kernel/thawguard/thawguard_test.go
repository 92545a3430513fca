package thawguard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
)

func TestMain(m *testing.M) {
	MaybeRun() // this test binary is the guard the tests start
	os.Exit(m.Run())
}

// v1Group makes a v1 group with a freezer, holding one sleep; its
// cleanup kills and removes both.
func v1Group(t *testing.T) (*cgroups.Group, *exec.Cmd, chan struct{}) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real cgroup tests need root")
	}
	h, err := cgroups.Detect()
	if errors.Is(err, cgroups.ErrUnsupported) {
		t.Skipf("no usable cgroup hierarchy: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != cgroups.V1 {
		t.Skipf("cgroup %v: the thaw guard is for v1 only", h.Mode())
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	parent := "airlock-thawguard-test-" + hex.EncodeToString(b[:])
	g, err := h.Create(parent, "g", cgroups.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Destroy(); err != nil {
			t.Error(err)
		}
		if err := h.RemoveParent(parent); err != nil {
			t.Error(err)
		}
	})
	if _, ok := g.V1FreezerState(); !ok {
		t.Skip("no v1 freezer")
	}
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	return g, cmd, done
}

func exe(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 5s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freezerState(t *testing.T, g *cgroups.Group) string {
	t.Helper()
	p, _ := g.V1FreezerState()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The owner's death (the pipe's write end closed without a byte) thaws
// the group, so the SIGKILL the v1 freezer held back ends its process; the
// guard ignores SIGTERM until then.
func TestOwnerDeathThaws(t *testing.T) {
	g, cmd, done := v1Group(t)
	var f Freezer
	if err := f.Freeze(g, exe(t), true); err != nil {
		t.Fatal(err)
	}
	if f.guard == nil {
		t.Fatal("no guard after a freeze of a v1 group that dies with its owner")
	}
	guardPID := f.guard.cmd.Process.Pid
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = syscall.Kill(guardPID, syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("a SIGKILLed process of a frozen v1 group died: no guard would be needed")
	default:
	}
	if !alive(guardPID) {
		t.Fatal("the guard died of SIGTERM")
	}
	// the owner dies: its end of the pipe closes without a word
	f.guard.w.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the group's process did not die after the owner's death (freezer %s)", freezerState(t, g))
	}
	waitFor(t, "the guard to exit", func() bool { return !alive(guardPID) })
}

// Thaw ends the guard without a thaw of its own: an old guard never undoes
// a later freeze.
func TestThawEndsGuard(t *testing.T) {
	g, _, _ := v1Group(t)
	var f Freezer
	if err := f.Freeze(g, exe(t), true); err != nil {
		t.Fatal(err)
	}
	first := f.guard.cmd.Process.Pid
	if err := f.Thaw(g, t.Logf); err != nil {
		t.Fatal(err)
	}
	if f.guard != nil || freezerState(t, g) != "THAWED" {
		t.Fatalf("after Thaw: guard %v, freezer %s", f.guard, freezerState(t, g))
	}
	if err := f.Freeze(g, exe(t), true); err != nil {
		t.Fatal(err)
	}
	second := f.guard.cmd.Process.Pid
	waitFor(t, "the first guard to exit", func() bool { return !alive(first) })
	time.Sleep(100 * time.Millisecond)
	if s := freezerState(t, g); s != "FROZEN" {
		t.Errorf("the first guard's exit undid the second freeze: %s", s)
	}
	f.Release(g, t.Logf)
	if f.guard != nil {
		t.Error("Release kept the guard")
	}
	waitFor(t, "the second guard to exit at Release", func() bool { return !alive(second) })
}

// A sandbox that does not die with its owner gets no guard: its frozen
// processes wait for Reap, as its running ones would.
func TestNoGuardWithoutDieWithOwner(t *testing.T) {
	g, _, _ := v1Group(t)
	var f Freezer
	if err := f.Freeze(g, exe(t), false); err != nil {
		t.Fatal(err)
	}
	if f.guard != nil {
		t.Error("a guard for a sandbox that does not die with its owner")
	}
	if err := f.Thaw(g, t.Logf); err != nil {
		t.Fatal(err)
	}
}

// The guard writes nothing but a v1 freezer's state file on a cgroup file
// system, and says so when started by hand.
func TestGuardRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "freezer.state")
	if err := os.WriteFile(fake, []byte("FROZEN\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{Arg0}, {Arg0, fake}, {Arg0, "freezer.state"}, {Arg0, "/sys/fs/cgroup/freezer/../freezer/freezer.state"}} {
		cmd := &exec.Cmd{Path: exe(t), Args: args}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "usage: airlock-thaw-guard") {
			t.Errorf("%q: %v %q, want exit 2 and the usage", args, err, out)
		}
	}
	if b, _ := os.ReadFile(fake); string(b) != "FROZEN\n" {
		t.Errorf("the guard wrote %s: %q", fake, b)
	}
}
