package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/sdk"
)

// Tests of 'airlock run' through a daemon (internal/cli/run/daemon.go).

// runD runs airlock with stdin from the file stdinFile ("": /dev/null, as
// exec leaves it: a pipe would send the run the direct way); it returns
// stdout, stderr and the exit code.
func (e *env) runD(stdinFile string, args ...string) (string, string, int) {
	e.t.Helper()
	c := e.cmd(args...)
	var o, er bytes.Buffer
	c.Stdout, c.Stderr = &o, &er
	if stdinFile != "" {
		f, err := os.Open(stdinFile)
		if err != nil {
			e.t.Fatal(err)
		}
		defer f.Close()
		c.Stdin = f
	}
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("airlock %v: %v", args, err)
	}
	return o.String(), er.String(), code
}

var viaDaemonLine = regexp.MustCompile(`airlock run: through the daemon at \S+: sandbox (\S+)`)

// sandboxOf is the sandbox id the --verbose line of stderr names.
func sandboxOf(t *testing.T, stderr string) string {
	t.Helper()
	m := viaDaemonLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no 'through the daemon' line in stderr: %q", stderr)
	}
	return m[1]
}

func sdkClient(t *testing.T, d *daemonProc) *sdk.Client {
	t.Helper()
	cl, err := sdk.New(sdk.WithSocket(d.sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// waitStopped waits for the daemon's record of sandbox id to be stopped
// (its teardown, after the run's exit, ended) and returns it.
func waitStopped(t *testing.T, cl *sdk.Client, id string) *sdk.Sandbox {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sb, err := cl.GetSandbox(context.Background(), id)
		if err != nil {
			t.Fatalf("sandbox %s: %v", id, err)
		}
		if sb.State == "stopped" {
			return sb
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s still %s after the run ended", id, sb.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunViaDaemonOutputAuditAndTeardown(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t, "--pool", "host=1")
	waitPoolReady(t, d, 1)
	cl := sdkClient(t, d)
	out, errOut, code := e.runD("", "run", "--verbose", "--env", "A=from-env", "--cwd", "/tmp", "--memory", "96M", "--",
		"/bin/sh", "-c", `printf 'out %s %s' "$A" "$(pwd)"; printf err >&2; exit 3`)
	if code != 3 || out != "out from-env /tmp" || !strings.Contains(errOut, "err") {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	id := sandboxOf(t, errOut)
	sb := waitStopped(t, cl, id)
	if sb.Limits.MemoryBytes != 96<<20 {
		t.Errorf("memory limit %d, want --memory's 96M", sb.Limits.MemoryBytes)
	}
	evs, err := cl.AuditEvents(context.Background(), sdk.AuditFilter{Sandbox: id})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, ev := range evs {
		kinds[ev.Kind] = true
		if ev.Kind == "exec.start" && !strings.Contains(string(ev.Payload), "/bin/sh") {
			t.Errorf("exec.start without the command: %s", ev.Payload)
		}
		// run's defaults are the pool's shape: the ready sandbox was claimed
		if ev.Kind == "sandbox.create" && !strings.Contains(string(ev.Payload), `"warm":true`) {
			t.Errorf("the run's sandbox was not a warm pool's: %s", ev.Payload)
		}
	}
	for _, k := range []string{"sandbox.create", "exec.start", "sandbox.stop"} {
		if !kinds[k] {
			t.Errorf("the daemon's audit log has no %s for the run's sandbox (kinds %v)", k, kinds)
		}
	}
	// the direct path's sandboxes and the daemon's share the state dir:
	// nothing of the run is left once its teardown is recorded
	if live, err := cl.ListSandboxes(context.Background(), "running"); err != nil || len(live) != 0 {
		t.Errorf("running sandboxes after the run: %v %v", live, err)
	}
}

func TestRunViaDaemonExitStatuses(t *testing.T) {
	e := newEnv(t)
	waitPoolReady(t, e.startDaemon(t, "--pool", "host=1"), 1)
	for _, c := range []struct {
		argv []string
		want int
		say  string
	}{
		{[]string{"/bin/true"}, 0, ""},
		{[]string{"/no/such/cmd"}, 127, ""},
		{[]string{"/etc/passwd"}, 126, ""},
		{[]string{"/bin/sh", "-c", "kill -9 $$"}, 128 + 9, ""},
		{[]string{"--timeout", "500ms", "--", "/bin/sleep", "30"}, 124, "timed out after 500ms"},
	} {
		args := append([]string{"run", "--daemon", "--verbose"}, c.argv...)
		if c.argv[0] != "--timeout" {
			args = append([]string{"run", "--daemon", "--verbose", "--"}, c.argv...)
		}
		_, errOut, code := e.runD("", args...)
		if code != c.want || !strings.Contains(errOut, "through the daemon") || !strings.Contains(errOut, c.say) {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.argv, code, c.want, errOut)
		}
	}
}

func TestRunViaDaemonStdinAndWorkspace(t *testing.T) {
	e := newEnv(t)
	e.startDaemon(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "stdin")
	if err := os.WriteFile(in, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.runD(in, "run", "--daemon", "--", "/bin/cat")
	if code != 0 || out != "line one\nline two\n" {
		t.Fatalf("stdin from a file: code %d stdout %q stderr %q", code, out, errOut)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "f"), []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = e.runD("", "run", "--daemon", "--workspace", ws, "--", "/bin/sh", "-c", "cat /workspace/sub/f && echo changed > /workspace/sub/f")
	if code != 0 || out != "host file" {
		t.Fatalf("workspace: code %d stdout %q stderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "sub", "f")); string(b) != "host file" {
		t.Errorf("the host's workspace changed: %q", b)
	}
}

func TestRunViaDaemonFallbackReasons(t *testing.T) {
	e := newEnv(t)
	// no daemon yet
	_, errOut, code := e.runD("", "run", "--verbose", "--", "/bin/true")
	if code != 0 || !strings.Contains(errOut, "airlock run: direct: no daemon answers at") {
		t.Errorf("no daemon: code %d stderr %q", code, errOut)
	}
	if _, errOut, code = e.runD("", "run", "--daemon", "--", "/bin/true"); code != 125 || !strings.Contains(errOut, "--daemon: cannot run through the daemon: no daemon answers") {
		t.Errorf("--daemon without a daemon: code %d stderr %q", code, errOut)
	}
	e.startDaemon(t)
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"--direct"}, "direct: --direct"},
		{[]string{"--state-dir", e.state}, "direct: --state-dir configures the direct path's backend"},
		{[]string{"--data-dir", e.data}, "direct: --data-dir configures"},
	} {
		args := append(append([]string{"run", "--verbose"}, c.args...), "--", "/bin/true")
		if _, errOut, code := e.runD("", args...); code != 0 || !strings.Contains(errOut, c.why) {
			t.Errorf("%v: code %d stderr %q, want %q", c.args, code, errOut, c.why)
		}
	}
	// a pipe as stdin: the direct path, which streams it
	out, errOut, code := e.run("piped\n", "run", "--verbose", "--", "/bin/cat")
	if code != 0 || out != "piped\n" || !strings.Contains(errOut, "direct: stdin is a pipe") {
		t.Errorf("piped stdin: code %d stdout %q stderr %q", code, out, errOut)
	}
	if _, errOut, code = e.run("piped\n", "run", "--daemon", "--", "/bin/cat"); code != 125 || !strings.Contains(errOut, "stdin is a pipe") {
		t.Errorf("--daemon with piped stdin: code %d stderr %q", code, errOut)
	}
	if _, errOut, code = e.runD("", "run", "--direct", "--daemon", "--", "/bin/true"); code != 2 {
		t.Errorf("--direct --daemon: code %d stderr %q", code, errOut)
	}
}

func TestRunViaDaemonSignalKillsAndRemoves(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t, "--pool", "host=1")
	waitPoolReady(t, d, 1)
	cl := sdkClient(t, d)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		c := e.cmd("run", "--daemon", "--verbose", "--", "/bin/sleep", "60")
		var errOut lockedBuffer
		c.Stderr = &errOut
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// the command is running once the daemon lists an exec of it
		var id string
		deadline := time.Now().Add(20 * time.Second)
		for id == "" || !execRunning(cl, id) {
			if m := viaDaemonLine.FindStringSubmatch(errOut.String()); m != nil {
				id = m[1]
			}
			if time.Now().After(deadline) {
				_ = c.Process.Kill()
				t.Fatalf("the run did not start: %q", errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = c.Process.Signal(sig)
		err := c.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(sig) {
			t.Errorf("%v: %v, want exit %d; stderr %q", sig, err, 128+int(sig), errOut.String())
		}
		// on a signal airlock waits for the teardown: stopped already
		sb, gerr := cl.GetSandbox(context.Background(), id)
		if gerr != nil || sb.State != "stopped" {
			t.Errorf("%v: sandbox %s after the run's exit: %+v %v", sig, id, sb, gerr)
		}
	}
}

// execRunning says whether sandbox id has an exec that has not ended.
func execRunning(cl *sdk.Client, id string) bool {
	execs, err := cl.ListExecs(context.Background(), id)
	if err != nil {
		return false
	}
	for _, x := range execs {
		if x.Ended.IsZero() && !x.Started.IsZero() {
			return true
		}
	}
	return false
}

// A daemon without gVisor answers a gvisor create unsupported: nothing
// was made, and the run goes the direct way, saying why.
func TestRunViaDaemonFallsBackForABackendItLacks(t *testing.T) {
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc not installed")
	}
	e := newEnv(t)
	e.prefix = []string{"env", "AIRLOCK_RUNSC=/nonexistent/runsc"} // the daemon's only
	e.startDaemon(t)
	e.prefix = nil
	out, errOut, code := e.runD("", "run", "--verbose", "--backend", "gvisor", "--", "/bin/echo", "hi")
	if code != 0 || out != "hi\n" || !strings.Contains(errOut, "airlock run: direct: the daemon cannot make this sandbox") {
		t.Errorf("code %d stdout %q stderr %q", code, out, errOut)
	}
	if _, errOut, code = e.runD("", "run", "--daemon", "--backend", "gvisor", "--", "/bin/true"); code != 125 || !strings.Contains(errOut, "--daemon: cannot run through the daemon") {
		t.Errorf("--daemon: code %d stderr %q", code, errOut)
	}
}

// The daemon's policy judges the run's command: one it holds for approval
// fails at once (126) with the approval's id; one it denies, 126 too.
func TestRunViaDaemonPolicyHoldsAndDenies(t *testing.T) {
	e := newEnv(t)
	pf := filepath.Join(t.TempDir(), "policy.yaml")
	pol := "classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: deny, secret: allow, unknown: ask, persist: allow}\noutside_scope: allow\n"
	if err := os.WriteFile(pf, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	e.startDaemon(t, "--policy", pf)
	start := time.Now()
	_, errOut, code := e.runD("", "run", "--daemon", "--", "some-unknown-tool")
	if code != 126 || !strings.Contains(errOut, "airlock approve ") || !strings.Contains(errOut, "nothing ran") {
		t.Errorf("held: code %d stderr %q", code, errOut)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a held run waited %s", took)
	}
	if _, errOut, code = e.runD("", "run", "--daemon", "--", "rm", "-rf", "/workspace"); code != 126 {
		t.Errorf("denied: code %d stderr %q", code, errOut)
	}
}

// A SIGKILLed 'airlock run' cannot destroy its sandbox: the daemon kills
// its command when the exec's client goes, and that end of the one-shot
// sandbox's command destroys it.
func TestRunViaDaemonSIGKILLEndsTheCommandAndSandbox(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	cl := sdkClient(t, d)
	c := e.cmd("run", "--daemon", "--verbose", "--", "/bin/sleep", "60")
	var errOut lockedBuffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	deadline := time.Now().Add(20 * time.Second)
	for id == "" || !execRunning(cl, id) {
		if m := viaDaemonLine.FindStringSubmatch(errOut.String()); m != nil {
			id = m[1]
		}
		if time.Now().After(deadline) {
			_ = c.Process.Kill()
			t.Fatalf("the run did not start: %q", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	for execRunning(cl, id) {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the command still runs after its client was killed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitStopped(t, cl, id)
}
