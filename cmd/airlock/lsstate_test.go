package main

import (
	"strings"
	"testing"
)

// sandbox ls --state filters by each state a sandbox can be in, paused
// too; an unknown state is a usage error.
func TestSandboxLsState(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	var ids []string
	for range 3 {
		out, errOut, code := e.run("", "sandbox", "create", sock)
		if code != 0 {
			t.Fatalf("create: %d %q", code, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	if _, errOut, code := e.run("", "sandbox", "pause", sock, ids[1]); code != 0 {
		t.Fatalf("pause: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "rm", sock, ids[2]); code != 0 {
		t.Fatalf("rm: %d %q", code, errOut)
	}
	for state, want := range map[string]string{"running": ids[0], "paused": ids[1], "stopped": ids[2]} {
		out, errOut, code := e.run("", "sandbox", "ls", sock, "--state", state)
		if code != 0 {
			t.Errorf("ls --state %s: %d %q", state, code, errOut)
			continue
		}
		for _, id := range ids {
			if strings.Contains(out, id) != (id == want) {
				t.Errorf("ls --state %s: %q, want only %s", state, out, want)
			}
		}
	}
	if _, errOut, code := e.run("", "sandbox", "ls", sock, "--state", "frozen"); code != 2 || !strings.Contains(errOut, "running, paused or stopped") {
		t.Errorf("ls --state frozen: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "resume", sock, ids[1]); code != 0 {
		t.Errorf("resume: %d %q", code, errOut)
	}
}
