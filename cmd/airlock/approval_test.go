package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// heldExec is an 'airlock sandbox exec' running in the background whose
// stderr is read line by line as it comes.
type heldExec struct {
	cmd    *exec.Cmd
	lines  chan string
	stdout bytes.Buffer
	seen   []string
}

func (e *env) startExec(t *testing.T, args ...string) *heldExec {
	t.Helper()
	h := &heldExec{cmd: e.cmd(args...), lines: make(chan string, 100)}
	h.cmd.Stdout = &h.stdout
	pipe, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	return h
}

var approvalIDRe = regexp.MustCompile(`'airlock approve (ap-[0-9a-z]+)'`)

// approvalID waits for the line that says the command is held: it must
// come at once, not when the wait ends.
func (h *heldExec) approvalID(t *testing.T) string {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("exec ended without saying it was held: %q", h.seen)
			}
			h.seen = append(h.seen, l)
			if m := approvalIDRe.FindStringSubmatch(l); m != nil {
				if !strings.Contains(strings.Join(h.seen, "\n"), "held for approval "+m[1]) || !strings.Contains(l, "airlock deny "+m[1]+" --reason") {
					t.Errorf("the held message: %q", h.seen)
				}
				return m[1]
			}
		case <-timeout:
			t.Fatalf("no word on stderr that the command is held, after 15s: %q", h.seen)
		}
	}
}

// wait returns the exit status and all of stderr.
func (h *heldExec) wait(t *testing.T) (int, string) {
	t.Helper()
	for l := range h.lines {
		h.seen = append(h.seen, l)
	}
	err := h.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, strings.Join(h.seen, "\n")
}

// A command the policy holds: exec says so at once with the approval id
// and how to decide, waits, and runs it once approved from another
// client; a denial ends it with 126 and the reason; an undecided wait
// ends it with 75.
func TestExecHeldForApproval(t *testing.T) {
	e := newEnv(t)
	pf := filepath.Join(filepath.Dir(e.state), "default.yaml")
	if out, _, code := e.run("", "policy", "default"); code != 0 || os.WriteFile(pf, []byte(out), 0o644) != nil {
		t.Fatalf("policy default: %d", code)
	}
	d := e.startDaemon(t, "--policy", pf)
	sock := "--socket=" + d.sock
	out, _, code := e.run("", "sandbox", "create", sock)
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("create: %d", code)
	}
	if _, errOut, code := e.run("", "sandbox", "exec", sock, id, "--", "mkdir", "-p", "/workspace/old1/x", "/workspace/old2/x"); code != 0 {
		t.Fatalf("mkdir: %d %q", code, errOut)
	}

	// approved: it runs
	h := e.startExec(t, "sandbox", "exec", sock, id, "--", "rm", "-rf", "/workspace/old1")
	apID := h.approvalID(t)
	if out, errOut, code := e.run("", "approve", sock, apID); code != 0 {
		t.Fatalf("approve: %d %q %q", code, out, errOut)
	}
	if code, errOut := h.wait(t); code != 0 || !strings.Contains(errOut, "approved") {
		t.Errorf("held, then approved: exit %d, %q", code, errOut)
	}
	if out, _, _ := e.run("", "sandbox", "exec", sock, id, "--", "ls", "/workspace"); strings.Contains(out, "old1") || !strings.Contains(out, "old2") {
		t.Errorf("after the approved rm: /workspace holds %q", out)
	}

	// denied: 126 and the reason
	h = e.startExec(t, "sandbox", "exec", sock, id, "--", "rm", "-rf", "/workspace/old2")
	apID = h.approvalID(t)
	if out, errOut, code := e.run("", "deny", sock, "--reason", "keep old2 for now", apID); code != 0 {
		t.Fatalf("deny: %d %q %q", code, out, errOut)
	}
	if code, errOut := h.wait(t); code != 126 || !strings.Contains(errOut, "keep old2 for now") {
		t.Errorf("held, then denied: exit %d, %q", code, errOut)
	}

	// nobody decides: its own status, and it says so
	start := time.Now()
	h = e.startExec(t, "sandbox", "exec", sock, "--approval-wait", "2s", id, "--", "rm", "-rf", "/workspace/old2")
	apID = h.approvalID(t)
	if code, errOut := h.wait(t); code != 75 || !strings.Contains(errOut, "not decided within 2s") || !strings.Contains(errOut, apID) {
		t.Errorf("held, undecided: exit %d, %q", code, errOut)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("--approval-wait 2s took %s", time.Since(start))
	}
	if out, _, _ := e.run("", "sandbox", "exec", sock, id, "--", "ls", "/workspace"); !strings.Contains(out, "old2") {
		t.Errorf("a denied or undecided rm ran: /workspace holds %q", out)
	}
}

// A tar download leaves out what the policy does not let the caller read,
// and the CLI says how many were left out.
func TestDownloadSaysWhatWasLeftOut(t *testing.T) {
	e := newEnv(t)
	pf := filepath.Join(filepath.Dir(e.state), "default.yaml")
	if out, _, code := e.run("", "policy", "default"); code != 0 || os.WriteFile(pf, []byte(out), 0o644) != nil {
		t.Fatalf("policy default: %d", code)
	}
	d := e.startDaemon(t, "--policy", pf)
	sock := "--socket=" + d.sock
	repo := t.TempDir()
	gitc := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	gitc("init", "-q")
	for name, body := range map[string]string{"main.go": "package main\n", ".env": "TOKEN=hunter2\n", "deploy.pem": "-----BEGIN PRIVATE KEY-----\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitc("add", ".")
	gitc("commit", "-qm", "base")
	out, errOut, code := e.run("", "task", "start", sock, "--repo", repo)
	task := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("task start: %d %q", code, errOut)
	}
	out, _, _ = e.run("", "task", "get", sock, "--json", task)
	m := regexp.MustCompile(`"sandbox_id": "([^"]+)"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("task get: %q", out)
	}
	out, errOut, code = e.run("", "sandbox", "download", sock, m[1], "/workspace")
	if code != 0 || !strings.Contains(out, "main.go") || strings.Contains(out, "hunter2") {
		t.Fatalf("download: %d (%d bytes) %q", code, len(out), errOut)
	}
	if !strings.Contains(errOut, "airlock sandbox download: 2 files left out (refused by policy") {
		t.Errorf("download did not say what it left out: %q", errOut)
	}
}
