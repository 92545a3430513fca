package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/hostside"
)

// A Create that fails at any of its steps, the last included, leaves
// nothing behind: no state dir, cgroup, uid slot lock, disk image, loop
// device, host mount or init process.
func TestCreateFailureLeavesNothing(t *testing.T) {
	needRuntime(t)
	b := newTestBackend(t)
	var names []string
	for _, st := range (&creation{b: b, v2: b.hier.Mode() == cgroups.V2}).steps() {
		names = append(names, st.Name)
	}
	// No garbage collection meanwhile: a finalizer closing a leaked file
	// (a slot's lock, a disk's mount) would hide the leak.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if len(names) < 10 || names[len(names)-1] != "lifetime" {
		t.Fatalf("steps %v: want the full list, lifetime last", names)
	}
	for _, step := range names {
		t.Run(strings.ReplaceAll(step, " ", "-"), func(t *testing.T) { failCreateAt(t, b, step) })
	}
}

// failCreateAt makes a Create on b fail right after step, and checks that
// it left nothing.
func failCreateAt(t *testing.T, b *Backend, step string) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := hostSpec(t)
	spec.ID, spec.Workspace, spec.Limits.Lifetime = runtime.NewID(), ws, time.Hour
	injected := errors.New("injected failure")
	slot, initPID, reached := -1, 0, false
	b.testFailAfter = func(st string, s *sandbox) error {
		if s.host.Slot != nil {
			slot = s.host.Slot.N
		}
		initPID = s.initPID
		if st == step {
			reached = true
			return injected
		}
		return nil
	}
	defer func() { b.testFailAfter = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := b.Create(ctx, spec)
	if err == nil {
		_ = sb.Destroy(context.Background())
		t.Fatalf("Create succeeded; want the failure injected after %q", step)
	}
	if !reached || !errors.Is(err, injected) {
		t.Fatalf("Create: %v; want the failure injected after %q", err, step)
	}
	if step != "state dir" && slot < 0 {
		t.Errorf("no uid slot seen after step %q", step)
	}
	if uid, ok := procUID(initPID); initPID > 0 && ok && uid == hostside.SlotUIDBase(slot) {
		t.Errorf("LEAK: init %d still runs as the sandbox's root", initPID)
	}
	waitNoLeftovers(t, &b.lay, spec.ID, slot)
}

// waitNoLeftovers fails the test if sandbox id still holds anything on
// the host after a few seconds (a loop device clears itself shortly
// after its last mount is gone). A uid slot reported still locked may,
// rarely, have been taken at once by another airlock on this host.
func waitNoLeftovers(t *testing.T, lay *hostside.Layout, id string, slot int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := lay.Leftovers(id, slot)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("LEAK: sandbox %s left %s", id, strings.Join(left, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A destroyed sandbox gives its disk back: its image's last descriptor,
// which the host keeps until the teardown, is closed (in the background:
// the freeing of its blocks is not Destroy's to wait for) and nothing of
// it is left, after a sandbox that wrote to its disk too.
func TestDestroyGivesTheDiskImageBack(t *testing.T) {
	b := newTestBackend(t)
	// No garbage collection meanwhile: the finalizer of a leaked image's
	// file would close it and hide the leak.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ctx := context.Background()
	sb, err := b.Create(ctx, hostSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	s := sb.(*sandbox)
	slot := s.host.Slot.N
	if left := b.lay.Leftovers(s.id, -1); !slices.ContainsFunc(left, func(l string) bool { return strings.HasPrefix(l, "descriptor ") }) {
		t.Fatalf("a live sandbox holds %v: want its image's descriptor among them", left)
	}
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"sh", "-c", "head -c 4194304 /dev/zero > /workspace/f && sync"}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := p.Wait(ctx); err != nil || st.Code != 0 {
		t.Fatalf("write to the disk: %+v %v", st, err)
	}
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	waitNoLeftovers(t, &b.lay, s.id, slot)
}

// The agent's file-activity watch outlives the sandbox's processes: the
// host holds its inotify instance while the sandbox lives (so that the
// instance's release is not in the init's exit) and closes it once the
// teardown is done.
func TestDestroyClosesTheAgentsWatchAfterTheTeardown(t *testing.T) {
	b := newTestBackend(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a finalizer would hide a leak
	ctx := context.Background()
	before := inotifyFDs(t)
	sb, err := b.Create(ctx, hostSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := inotifyFDs(t); n != before+1 {
		_ = sb.Destroy(ctx)
		t.Fatalf("%d inotify instances with a live sandbox, %d before: want its agent's kept", n, before)
	}
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); inotifyFDs(t) != before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("LEAK: %d inotify instances after the teardown, %d before", inotifyFDs(t), before)
		}
	}
}

// inotifyFDs counts this process's inotify instances.
func inotifyFDs(t *testing.T) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// The root overlay is mounted volatile where the kernel has it (5.10+):
// its upper layer's disk dies with the sandbox, and a sync of it would
// be in the exit of the sandbox's last process, which a Destroy waits
// for.
func TestRootOverlayIsVolatile(t *testing.T) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		t.Fatal(err)
	}
	if major < 5 || major == 5 && minor < 10 {
		t.Skip("overlayfs has no volatile before Linux 5.10")
	}
	b := newTestBackend(t)
	ctx := context.Background()
	sb, err := b.Create(ctx, hostSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(ctx)
	var out strings.Builder
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"cat", "/proc/self/mountinfo"}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := p.Wait(ctx); err != nil || st.Code != 0 {
		t.Fatalf("cat: %+v %v", st, err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/" {
			if !strings.Contains(line, " overlay ") || !strings.Contains(line, "volatile") {
				t.Errorf("the root mount is not a volatile overlay: %s", line)
			}
			return
		}
	}
	t.Fatalf("no root mount in the sandbox's mountinfo:\n%s", out.String())
}
