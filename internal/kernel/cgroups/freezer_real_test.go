package cgroups

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Why a paused native sandbox needs a thaw guard on v1 and not on v2: the
// v1 freezer holds back even SIGKILL (the sandbox init's parent-death
// signal) until the group is thawed through V1FreezerState's file.
func TestV1FrozenHoldsBackSIGKILL(t *testing.T) {
	h := realV1(t)
	if _, ok := h.v1["freezer"]; !ok {
		t.Skip("no v1 freezer hierarchy")
	}
	g := mustCreate(t, h, testParent(t, h), "frozen-kill", Limits{})
	p := shellInGroup(t, g, "sleep 1000")
	t.Cleanup(func() { _ = g.Thaw() }) // before the child's cleanup kills it
	if err := g.Freeze(); err != nil {
		t.Fatal(err)
	}
	state, ok := g.V1FreezerState()
	if !ok || state != filepath.Join(g.ctrl["freezer"], "freezer.state") {
		t.Fatalf("V1FreezerState = %q %v", state, ok)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	time.Sleep(300 * time.Millisecond)
	if p.exited() {
		t.Fatal("a SIGKILLed process of a frozen v1 group died: the thaw guard would not be needed")
	}
	// what the guard does
	if err := os.WriteFile(state, []byte("THAWED"), 0); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 5*time.Second)
}

func TestV2FrozenLetsSIGKILLThrough(t *testing.T) {
	h := realV2(t)
	g := mustCreate(t, h, testParent(t, h), "frozen-kill", Limits{})
	p := shellInGroup(t, g, "sleep 1000")
	t.Cleanup(func() { _ = g.Thaw() }) // before the child's cleanup kills it
	if err := g.Freeze(); err != nil {
		t.Fatal(err)
	}
	if state, ok := g.V1FreezerState(); ok {
		t.Errorf("V1FreezerState on v2: %q", state)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.wait(t, 5*time.Second) // while frozen: no thaw guard needed on v2
}
