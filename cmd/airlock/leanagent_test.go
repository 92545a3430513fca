package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A sandbox's PID 1 is the lean agent the core carries, not a copy of
// the core: the backend's bin directory holds one root-owned, read-only
// airlock-agent file, a fraction of the core's size, and nothing else.
func TestSandboxesRunTheLeanAgent(t *testing.T) {
	if binSkip != "" {
		t.Skip(binSkip)
	}
	e := newEnv(t)
	if out, errOut, code := e.run("", "run", "--", "/bin/sh", "-c", "echo ok"); out != "ok\n" || code != 0 {
		t.Fatalf("run: %q %q %d", out, errOut, code)
	}
	ents, err := os.ReadDir(filepath.Join(e.state, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Fatalf("bin directory holds %v, want the agent alone", ents)
	}
	agent := filepath.Join(e.state, "bin", ents[0].Name())
	fi, err := os.Stat(agent)
	if err != nil {
		t.Fatal(err)
	}
	core, err := os.Stat(airlockBin)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if m, _ := filepath.Match("airlock-agent-*", ents[0].Name()); !m || fi.Mode().Perm() != 0o555 || st.Uid != 0 {
		t.Fatalf("agent %s mode %v uid %d: want airlock-agent-*, 0555, root", ents[0].Name(), fi.Mode().Perm(), st.Uid)
	}
	if fi.Size()*3 > core.Size() {
		t.Fatalf("the agent is %d bytes, the core %d: not the lean agent", fi.Size(), core.Size())
	}
	// Run by hand, it says what it is and does nothing.
	out, err := exec.Command(agent).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "in-sandbox agent") {
		t.Fatalf("the agent run by hand: %v %q", err, out)
	}
}
