package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testpty"
)

// The operator at a terminal decides a held command in place: the whole
// prompt is shown, y approves it (and it runs), n denies it (issue 19: a
// held command blocked the operator's own CLI for 5 minutes). Without a
// terminal, the CLI only waits (TestExecHeldForApproval).
func TestOperatorApprovesAtTheTerminal(t *testing.T) {
	e := newEnv(t)
	pf := filepath.Join(filepath.Dir(e.state), "default.yaml")
	if out, _, code := e.run("", "policy", "default"); code != 0 || os.WriteFile(pf, []byte(out), 0o644) != nil {
		t.Fatalf("policy default: %d", code)
	}
	d := e.startDaemon(t, "--policy", pf)
	sock := "--socket=" + d.sock
	out, _, _ := e.run("", "sandbox", "create", sock)
	id := strings.TrimSpace(out)
	if _, errOut, code := e.run("", "sandbox", "exec", sock, id, "--", "mkdir", "-p", "/workspace/old1", "/workspace/old2"); code != 0 {
		t.Fatalf("mkdir: %d %q", code, errOut)
	}
	for _, c := range []struct {
		answer, dir string
		code        int
		state       string
	}{{"y\n", "old1", 0, "approved"}, {"n\n", "old2", 126, "denied"}} {
		code, shown := execOnTerminal(t, e, c.answer, "sandbox", "exec", sock, id, "--", "rm", "-rf", "/workspace/"+c.dir)
		if code != c.code || !strings.Contains(shown, "command:") || !strings.Contains(shown, "rm -rf /workspace/"+c.dir) || !strings.Contains(shown, "effect:") {
			t.Errorf("%s: exit %d, the terminal showed %q", c.state, code, shown)
		}
		out, _, _ := e.run("", "approvals", sock, "--state", c.state)
		if !strings.Contains(out, "rm -rf /workspace/"+c.dir) || !strings.Contains(out, "at the operator's terminal") {
			t.Errorf("the %s approval: %q", c.state, out)
		}
	}
	if out, _, _ := e.run("", "sandbox", "exec", sock, id, "--", "ls", "/workspace"); strings.Contains(out, "old1") || !strings.Contains(out, "old2") {
		t.Errorf("after the decisions /workspace holds %q", out)
	}
}

// execOnTerminal runs airlock with stdin and stderr on a terminal, types
// answer once it asks, and returns the exit code and what it showed.
func execOnTerminal(t *testing.T, e *env, answer string, args ...string) (int, string) {
	t.Helper()
	master, slave := testpty.Open(t)
	cmd := e.cmd(args...)
	cmd.Stdin, cmd.Stderr = slave, slave
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var shown bytes.Buffer
	buf := make([]byte, 4096)
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(shown.String(), "approve it here?"); {
		_ = master.SetReadDeadline(deadline)
		n, err := master.Read(buf)
		shown.Write(buf[:n])
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("no prompt: %v %q", err, shown.String())
		}
	}
	if _, err := io.WriteString(master, answer); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, shown.String()
}
