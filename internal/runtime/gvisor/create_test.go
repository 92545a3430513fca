package gvisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// A Create that fails at any of its steps, the last included, leaves
// nothing behind: no state dir, cgroup, disk image, loop device, host
// mount or runsc.
func TestCreateFailureLeavesNothing(t *testing.T) {
	b := newTestBackend(t)
	// No garbage collection meanwhile: a finalizer closing a leaked file
	// (a disk's mount) would hide the leak.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var names []string
	for _, st := range (&creation{b: b}).steps() {
		names = append(names, st.Name)
	}
	if len(names) < 8 || names[len(names)-1] != "lifetime" {
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
	runscPID, reached := 0, false
	b.testFailAfter = func(st string, s *sandbox) error {
		if s.cmd != nil && s.cmd.Process != nil {
			runscPID = s.cmd.Process.Pid
		}
		if st == step {
			reached = true
			return injected
		}
		return nil
	}
	defer func() { b.testFailAfter = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := b.Create(ctx, spec)
	if err == nil {
		_ = sb.Destroy(context.Background())
		t.Fatalf("Create succeeded; want the failure injected after %q", step)
	}
	if !reached || !errors.Is(err, injected) {
		t.Fatalf("Create: %v; want the failure injected after %q", err, step)
	}
	if runscPID > 0 {
		if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(runscPID) + "/cmdline"); err == nil && strings.Contains(string(cmd), spec.ID) {
			t.Errorf("LEAK: runsc %d of the sandbox still runs", runscPID)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := b.lay.Leftovers(spec.ID, -1)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("LEAK: sandbox %s left %s", spec.ID, strings.Join(left, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
