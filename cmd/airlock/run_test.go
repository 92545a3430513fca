package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// These tests drive the real binary, as a user would.
var (
	airlockBin string
	// frontBin is bin/airlock as users get it: the front, this core in it
	frontBin string
	binSkip  string
)

func TestMain(m *testing.M) {
	native.MaybeInit()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Geteuid() != 0 {
		binSkip = "needs root"
	}
	d, err := os.MkdirTemp("", "airlock-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(d)
	_ = os.Chmod(d, 0o711)
	airlockBin = filepath.Join(d, "airlock")
	frontBin = filepath.Join(d, "airlock-front")
	// As `make build` makes it: the core these tests run is the one the
	// front carries, with the lean agent embedded.
	build := exec.Command("../../scripts/build.sh", frontBin)
	build.Env = append(os.Environ(), "CORE_OUT="+airlockBin, "AIRLOCK_CORE_DIR="+filepath.Join(d, "cores"))
	_ = os.Setenv("AIRLOCK_CORE_DIR", filepath.Join(d, "cores")) // for the front
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build airlock: %v\n%s", err, out)
		return 1
	}
	defer func() {
		if debianTarDir != "" {
			os.RemoveAll(debianTarDir)
		}
	}()
	return m.Run()
}

// env is one isolated airlock installation: state, data, cgroup parent.
type env struct {
	t                       *testing.T
	state, data, cgroupName string
	// prefix runs airlock under another command (prlimit ... --)
	prefix []string
	// defaultCgroup: no AIRLOCK_CGROUP_PARENT, airlock's own default
	// (cgroupName is set to it)
	defaultCgroup bool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if binSkip != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(binSkip)
		}
		t.Skip(binSkip)
	}
	d := t.TempDir()
	_ = os.Chmod(d, 0o711)
	_ = os.Chmod(filepath.Dir(d), 0o711)
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	e := &env{t: t, state: filepath.Join(d, "state"), data: filepath.Join(d, "data"), cgroupName: "airlock-cmdtest-" + hex.EncodeToString(rb[:])}
	t.Cleanup(func() {
		// reap whatever a failed test left, then insist nothing remains
		out, _ := e.cmd("reap").CombinedOutput()
		if c := e.census(); c != (native.Census{}) {
			t.Errorf("leftovers after test: %+v (%s)", c, out)
		}
		for _, ctl := range []string{"memory", "pids", "cpu", "freezer", "cpuacct", "unified"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", ctl, e.cgroupName)); err == nil {
				t.Errorf("airlock reap left the empty cgroup parent %s/%s", ctl, e.cgroupName)
			}
		}
	})
	return e
}

func (e *env) cmd(args ...string) *exec.Cmd {
	c := exec.Command(airlockBin, args...)
	if len(e.prefix) > 0 {
		c = exec.Command(e.prefix[0], append(append(e.prefix[1:len(e.prefix):len(e.prefix)], airlockBin), args...)...)
	}
	// AIRLOCK_SOCKET: the socket of this env's daemon (startDaemon's), so
	// that 'airlock run' never finds the host's
	c.Env = append(withoutEnv(withoutEnv(withoutEnv(os.Environ(), "AIRLOCK_CGROUP_PARENT"), "AIRLOCK_SOCKET"), "AIRLOCK_RUN_DIRECT"), "AIRLOCK_STATE_DIR="+e.state, "AIRLOCK_DATA_DIR="+e.data,
		"AIRLOCK_SOCKET="+filepath.Join(filepath.Dir(e.state), "airlock.sock"))
	if !e.defaultCgroup {
		c.Env = append(c.Env, "AIRLOCK_CGROUP_PARENT="+e.cgroupName)
	}
	return c
}

// run runs airlock with args; it returns stdout, stderr and the exit code.
func (e *env) run(stdin string, args ...string) (string, string, int) {
	e.t.Helper()
	c := e.cmd(args...)
	var o, er bytes.Buffer
	c.Stdout, c.Stderr = &o, &er
	c.Stdin = strings.NewReader(stdin)
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("airlock %v: %v", args, err)
	}
	return o.String(), er.String(), code
}

// census counts leftovers of this env without reaping them (a bare
// Backend would reap on New, so count by hand).
func (e *env) census() native.Census {
	var c native.Census
	if ents, err := os.ReadDir(filepath.Join(e.state, "sandboxes")); err == nil {
		c.StateDirs = len(ents)
	}
	for _, ctl := range []string{"memory", "pids", "cpu", "freezer", "cpuacct", "unified"} {
		if ents, err := os.ReadDir(filepath.Join("/sys/fs/cgroup", ctl, e.cgroupName)); err == nil {
			for _, x := range ents {
				if x.IsDir() {
					c.Cgroups++
				}
			}
		}
	}
	c.Processes = countMarked(e.cgroupName)
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		c.Mounts = strings.Count(string(b), e.state)
	}
	return c
}

// countMarked counts sandboxed processes (host uid in the sandbox range)
// whose command line carries marker.
func countMarked(marker string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, x := range ents {
		b, err := os.ReadFile("/proc/" + x.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		st, err := os.Stat("/proc/" + x.Name())
		if err != nil {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid >= native.UIDRangeStart {
			n++
		}
	}
	return n
}

func TestRunBasics(t *testing.T) {
	e := newEnv(t)
	out, errOut, code := e.run("", "run", "--", "/bin/sh", "-c", "echo hi; id -u; exit 7")
	if out != "hi\n1000\n" || code != 7 {
		t.Errorf("got %q %q code %d", out, errOut, code)
	}
	out, _, code = e.run("piped input\n", "run", "--", "cat")
	if out != "piped input\n" || code != 0 {
		t.Errorf("stdin: %q code %d", out, code)
	}
	out, _, _ = e.run("", "run", "--env", "A=1", "--env", "B=two", "--", "/bin/sh", "-c", "echo $A $B")
	if out != "1 two\n" {
		t.Errorf("env: %q", out)
	}
	// The template's PATH finds the host's Go (issue 19: a task's `go
	// test ./...` failed with "go: not found"); the caller's PATH wins,
	// and every program sees one PATH.
	if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		out, errOut, _ = e.run("", "run", "--", "/bin/sh", "-c", "command -v go; env | grep -c '^PATH='")
		if out != "/usr/local/go/bin/go\n1\n" {
			t.Errorf("go on the template's PATH: %q %q", out, errOut)
		}
		out, _, _ = e.run("", "run", "--env", "PATH=/bin", "--", "/bin/sh", "-c", "echo $PATH; env | grep -c '^PATH='")
		if out != "/bin\n1\n" {
			t.Errorf("the caller's PATH: %q", out)
		}
	}
}

func TestRunExitStatuses(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		args    []string
		code    int
		errLike string
	}{
		{[]string{"run", "--", "no-such-cmd"}, 127, "command not found"},
		{[]string{"run", "--", "/etc/passwd"}, 126, "not an executable"},
		{[]string{"run", "--timeout", "300ms", "--", "sleep", "10"}, 124, "timed out after 300ms"},
		{[]string{"run", "--memory", "32M", "--", "/bin/sh", "-c", "head -c 200M /dev/zero | tail"}, 137, "memory limit of 32MiB exceeded"},
		{[]string{"run", "--", "/bin/sh", "-c", "kill -9 $$"}, 137, ""},
		{[]string{"run", "--disk", "8M", "--", "/bin/sh", "-c", "head -c 20M /dev/zero > /workspace/f"}, 1, "disk is full"},
		{[]string{"run", "--output-limit", "100", "--", "/bin/sh", "-c", "head -c 5000 /dev/zero"}, 0, "output truncated"},
	}
	for _, c := range cases {
		_, errOut, code := e.run("", c.args...)
		if code != c.code || !strings.Contains(errOut, c.errLike) {
			t.Errorf("airlock %v: code %d stderr %q; want %d and %q", c.args, code, errOut, c.code, c.errLike)
		}
	}
}

func TestRunWorkspaceIsACopy(t *testing.T) {
	e := newEnv(t)
	ws := t.TempDir()
	_ = os.Chmod(ws, 0o700)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("original\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", filepath.Join(ws, "evil")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.run("", "run", "--workspace", ws, "--", "/bin/sh", "-c", "cat a.txt; echo changed > a.txt; rm -f evil; touch new; cat a.txt")
	if code != 0 || out != "original\nchanged\n" {
		t.Fatalf("got %q %q %d", out, errOut, code)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
	if string(b) != "original\n" {
		t.Errorf("host file changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(ws, "evil")); err != nil {
		t.Errorf("host symlink removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "new")); err == nil {
		t.Error("file created in the host workspace")
	}
}

func TestRunBadInput(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"run"}, "no command given"},
		{[]string{"run", "--"}, "no command given"},
		{[]string{"run", "--template", "nope", "--", "true"}, `template "nope": not found`},
		{[]string{"run", "--template", "../x", "--", "true"}, "--template"},
		{[]string{"run", "--workspace", "/no/such/dir", "--", "true"}, "no such directory"},
		{[]string{"run", "--workspace", "/etc/passwd", "--", "true"}, "not a directory"},
		{[]string{"run", "--memory", "lots", "--", "true"}, "not a size"},
		{[]string{"run", "--memory", "1M", "--", "true"}, "at least 16M"},
		{[]string{"run", "--pids", "0", "--", "true"}, "at least 32"},
		{[]string{"run", "--cpus", "-1", "--", "true"}, "must not be negative"},
		{[]string{"run", "--timeout", "soon", "--", "true"}, `--timeout: "soon": use a number with a unit`},
		{[]string{"run", "--env", "NOEQUALS", "--", "true"}, "use K=V"},
		{[]string{"run", "--cwd", "rel", "--", "true"}, "absolute"},
		{[]string{"frobnicate"}, "unknown command"},
	}
	for _, c := range cases {
		_, errOut, code := e.run("", c.args...)
		if code == 0 || !strings.Contains(errOut, c.msg) {
			t.Errorf("airlock %v: code %d stderr %q; want non-zero and %q", c.args, code, errOut, c.msg)
		}
		if lines := strings.Count(strings.TrimSpace(errOut), "\n") + 1; lines > 2 {
			t.Errorf("airlock %v: %d lines of error, want one line (plus a hint): %q", c.args, lines, errOut)
		}
	}
	if c := e.census(); c != (native.Census{}) {
		t.Errorf("bad input left state behind: %+v", c)
	}
	out, _, code := e.run("", "run", "--help")
	if code != 0 || !strings.Contains(out, "usage: airlock run") || !strings.Contains(out, "-memory") {
		t.Errorf("--help: code %d %q", code, out)
	}
}

func TestRunNotRoot(t *testing.T) {
	if binSkip != "" {
		t.Skip(binSkip)
	}
	c := exec.Command(airlockBin, "run", "--", "true")
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs root") {
		t.Errorf("as nobody: %v %q; want a 'needs root' error", err, out)
	}
}

// waitMarked waits until n processes carry marker (the sandbox is up).
func waitMarked(t *testing.T, marker string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for countMarked(marker) < n {
		if time.Now().After(deadline) {
			t.Fatalf("sandboxed process %q did not start", marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunSignalTearsDown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			marker := "sleep-marker-" + e.cgroupName
			c := e.cmd("run", "--", "/bin/sh", "-c", "setsid sh -c 'sleep 1000; : "+marker+"' & sleep 1000; : "+marker)
			var errb bytes.Buffer
			c.Stderr = &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			waitMarked(t, marker, 2)
			_ = c.Process.Signal(sig)
			err := c.Wait()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 128+int(sig) {
				t.Errorf("exit after %v: %v, want %d", sig, err, 128+int(sig))
			}
			if got := e.census(); got != (native.Census{}) {
				t.Errorf("after %v: leftovers %+v (stderr %q)", sig, got, errb.String())
			}
		})
	}
}

func TestRunSIGKILLLeftoversAreReaped(t *testing.T) {
	e := newEnv(t)
	marker := "sleep-marker-" + e.cgroupName
	c := e.cmd("run", "--", "/bin/sh", "-c", "setsid nohup sh -c 'sleep 1000; : "+marker+"' >/dev/null 2>&1 & sleep 1000; : "+marker)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitMarked(t, marker, 2)
	before := e.census()
	if before.StateDirs != 1 || before.Cgroups == 0 {
		t.Fatalf("census while running: %+v, want one sandbox", before)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	// the init dies with its owner; its processes with it
	deadline := time.Now().Add(10 * time.Second)
	for countMarked(marker) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	left := e.census()
	if left.Processes != 0 {
		t.Errorf("sandbox processes survived SIGKILL of airlock run: %d", left.Processes)
	}
	if left.StateDirs != 1 || left.Cgroups == 0 {
		t.Fatalf("after SIGKILL: %+v; expected the state dir and cgroups to remain for the reaper", left)
	}
	// the next airlock start reaps them
	out, errOut, code := e.run("", "run", "--", "true")
	if code != 0 {
		t.Fatalf("next run: %q %q", out, errOut)
	}
	if got := e.census(); got != (native.Census{}) {
		t.Errorf("after the next start: leftovers %+v", got)
	}
}
