package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/sdk"

	_ "modernc.org/sqlite"
)

const allowAllPolicy = "classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: allow, unknown: allow, persist: allow}\noutside_scope: allow\n"

// daemonProc is a real `airlock serve` process of an env.
type daemonProc struct {
	cmd    *exec.Cmd
	sock   string
	client *http.Client
	log    *lockedBuffer
}

// lockedBuffer is the daemon's stderr, which tests may read while the
// daemon still writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (e *env) startDaemon(t testing.TB, extra ...string) *daemonProc {
	t.Helper()
	sock := filepath.Join(filepath.Dir(e.state), "airlock.sock")
	if !slices.Contains(extra, "--policy") {
		// These tests are of the daemon, not of its policy (policy_test.go).
		pf := filepath.Join(filepath.Dir(e.state), "allow-all.yaml")
		if err := os.WriteFile(pf, []byte(allowAllPolicy), 0o644); err != nil {
			t.Fatal(err)
		}
		extra = append(extra, "--policy", pf)
	}
	c := e.cmd(append([]string{"serve", "--socket", sock}, extra...)...)
	d := &daemonProc{cmd: c, sock: sock, log: &lockedBuffer{}}
	c.Stderr = d.log
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	d.client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := d.client.Get("http://airlock/v1/health"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			_ = c.Process.Kill()
			t.Fatalf("daemon did not come up: %s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
	})
	return d
}

func (d *daemonProc) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	resp, err := d.client.Post("http://airlock"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestServeSecondDaemonRefused(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	st, err := os.Stat(d.sock)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode: %v %v", st.Mode(), err)
	}
	_, errOut, code := e.run("", "serve", "--socket", d.sock+"2")
	if code == 0 || !strings.Contains(errOut, "another airlock daemon is running") {
		t.Errorf("second daemon: code %d %q", code, errOut)
	}
	// the first one is unharmed
	if resp, err := d.client.Get("http://airlock/v1/health"); err != nil || resp.StatusCode != 200 {
		t.Errorf("first daemon after the second was refused: %v", err)
	}
}

func TestServeGracefulStop(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	code, body := d.post(t, "/v1/sandboxes", `{}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	if c := e.census(); c.StateDirs != 1 {
		t.Fatalf("census with one sandbox: %+v", c)
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.cmd.Wait(); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v (%s)", err, d.log)
	}
	if _, err := os.Stat(d.sock); err == nil {
		t.Error("socket left behind")
	}
	if c := e.census(); c != (native.Census{}) {
		t.Errorf("after graceful stop: %+v", c)
	}
}

func TestServeSIGKILLMidExec(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	code, body := d.post(t, "/v1/sandboxes", `{}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var sb struct{ ID string }
	_ = json.Unmarshal(body, &sb)
	// a long exec in flight
	go func() {
		resp, err := d.client.Post("http://airlock/v1/sandboxes/"+sb.ID+"/exec", "application/json", strings.NewReader(`{"argv":["sleep","100"]}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	// and a task with an agent at work
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git: %v %s", err, out)
		}
	}
	sock := "--socket=" + d.sock
	out, errOut, code := e.run("", "task", "start", sock, "--repo", repo, "--test", "true")
	taskID := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("task start: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "task", "exec", taskID, sock, "--", "/bin/sh", "-c", "echo hello > notes.txt"); code != 0 {
		t.Fatalf("task exec: %d %q", code, errOut)
	}
	time.Sleep(500 * time.Millisecond)
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	// what a diff that the kill cut short leaves behind
	work := filepath.Join(e.data, "tasks", taskID, "work-123456")
	if err := os.MkdirAll(filepath.Join(work, "tree"), 0o700); err != nil {
		t.Fatal(err)
	}
	// restart: leftovers reaped, the record kept and marked lost
	d2 := e.startDaemon(t)
	if _, err := os.Stat(work); err == nil {
		t.Errorf("the killed daemon's diff copy %s is still there", work)
	}
	resp, err := d2.client.Get("http://airlock/v1/sandboxes/" + sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		State      string `json:"state"`
		StopReason string `json:"stop_reason"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if got.State != "stopped" || got.StopReason != "lost" {
		t.Errorf("after SIGKILL and restart: %+v", got)
	}
	resp, err = d2.client.Get("http://airlock/v1/sandboxes/" + sb.ID + "/execs")
	if err != nil {
		t.Fatal(err)
	}
	var execs struct {
		Execs []struct {
			Argv  []string   `json:"argv"`
			Ended *time.Time `json:"ended"`
			Error string     `json:"error"`
		} `json:"execs"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&execs)
	resp.Body.Close()
	if len(execs.Execs) != 1 || execs.Execs[0].Argv[0] != "sleep" {
		t.Fatalf("exec record lost: %+v", execs)
	}
	// The command that ran is not shown running for ever: it ended with
	// its sandbox, and both ends are on record (found in a lifecycle
	// review).
	if x := execs.Execs[0]; x.Ended == nil || !strings.HasPrefix(x.Error, "lost") {
		t.Errorf("the lost command's record: %+v", x)
	}
	sock2 := "--socket=" + d2.sock
	for _, kind := range []string{"exec.end", "sandbox.stop"} {
		out, _, code := e.run("", "audit", "query", sock2, "--sandbox", sb.ID, "--kind", kind, "--json")
		if code != 0 || !strings.Contains(out, `"reason":"lost"`) {
			t.Errorf("audit %s of the lost sandbox: %d %q", kind, code, out)
		}
	}
	if out, _, code := e.run("", "audit", "verify", sock2); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("audit verify after the restart: %d %q", code, out)
	}
	// The task whose sandbox was lost can be finished and exported; it
	// says that no tests ran and that its workspace went with the daemon.
	out, errOut, code = e.run("", "task", "finish", sock2, "--json", taskID)
	var fin struct {
		Task struct {
			State         string `json:"state"`
			WorkspaceGone *struct {
				Reason   string `json:"reason"`
				DiffKept bool   `json:"diff_kept"`
			} `json:"workspace_gone"`
		} `json:"task"`
		Test *struct{} `json:"test"`
	}
	if err := json.Unmarshal([]byte(out), &fin); code != 0 || err != nil || fin.Task.State != "finished" || fin.Test != nil ||
		fin.Task.WorkspaceGone == nil || fin.Task.WorkspaceGone.Reason != "lost" || fin.Task.WorkspaceGone.DiffKept {
		t.Errorf("finish of the lost task: %d %q %q", code, out, errOut)
	}
	bf := filepath.Join(t.TempDir(), "b.tar.gz")
	if _, errOut, code := e.run("", "task", "export", sock2, taskID, "-o", bf); code != 0 {
		t.Errorf("export of the lost task: %d %q", code, errOut)
	} else if out, errOut, code := e.run("", "bundle", "verify", "--key-file", filepath.Join(e.data, "audit.key"), bf); code != 0 {
		t.Errorf("bundle verify: %d %q %q", code, out, errOut)
	}
	if c := e.census(); c != (native.Census{}) {
		t.Errorf("after restart: leftovers %+v", c)
	}
}

// The CLI verbs against a real daemon, as the demo uses them.
func TestSandboxCLIAgainstDaemon(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	out, errOut, code := e.run("", "sandbox", "create", sock, "--label", "demo=1")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	repo := t.TempDir()
	_ = os.MkdirAll(filepath.Join(repo, "src"), 0o755)
	_ = os.WriteFile(filepath.Join(repo, "src", "a.txt"), []byte("alpha\n"), 0o644)
	_ = os.Symlink("src/a.txt", filepath.Join(repo, "link"))
	if _, errOut, code := e.run("", "sandbox", "upload", sock, id, repo); code != 0 {
		t.Fatalf("upload: %d %q", code, errOut)
	}
	if out, errOut, code := e.run("", "sandbox", "cat", sock, id, "/workspace/link"); code != 0 || out != "alpha\n" {
		t.Errorf("cat through the uploaded symlink: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("beta\n", "sandbox", "put", sock, "--parents", id, "/workspace/new/b.txt"); code != 0 {
		t.Errorf("put: %d %q", code, errOut)
	}
	out, errOut, code = e.run("", "sandbox", "exec", sock, id, "--", "/bin/sh", "-c", "cat new/b.txt; stat -c %U src/a.txt")
	if code != 0 || out != "beta\nsandbox\n" {
		t.Errorf("exec: %d %q %q", code, out, errOut)
	}
	if out, _, code := e.run("", "sandbox", "files", sock, id, "/workspace"); code != 0 || !strings.Contains(out, "link -> src/a.txt") {
		t.Errorf("files: %d %q", code, out)
	}
	if _, errOut, code := e.run("", "sandbox", "cat", sock, id, "/workspace/nope"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("cat of a missing file: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "exec", sock, id, "--", "/etc/passwd"); code != 126 {
		t.Errorf("exec of a non-executable: %d %q", code, errOut)
	}
	out, errOut, code = e.run("", "sandbox", "exec", sock, "--background", id, "--", "sleep", "100")
	execID := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(execID, "e-") {
		t.Fatalf("exec --background: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "kill", sock, "--signal", "TERM", id, execID); code != 0 {
		t.Errorf("kill: %d %q", code, errOut)
	}
	// the one-call verbs
	if _, errOut, code := e.run("", "sandbox", "mkdir", sock, id, "/workspace/d1/d2"); code != 0 {
		t.Errorf("mkdir: %d %q", code, errOut)
	}
	if out, _, code := e.run("", "sandbox", "stat", sock, id, "/workspace/d1/d2"); code != 0 || !strings.Contains(out, " dir ") {
		t.Errorf("stat: %d %q", code, out)
	}
	if _, errOut, code := e.run("", "sandbox", "rmf", sock, id, "/workspace/d1"); code != 0 {
		t.Errorf("rmf: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "stat", sock, id, "/workspace/d1"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("stat after rmf: %d %q", code, errOut)
	}
	if out, _, code := e.run("", "sandbox", "download", sock, id, "/workspace"); code != 0 || !strings.Contains(out, "src/a.txt") || !strings.Contains(out, "alpha") {
		t.Errorf("download: %d (%d bytes)", code, len(out))
	}
	if out, _, code := e.run("", "sandbox", "health", sock); code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Errorf("health: %d %q", code, out)
	}
	out, _, _ = e.run("", "sandbox", "exec", sock, "--background", id, "--", "sleep", "30")
	if _, errOut, code := e.run("", "sandbox", "resize", sock, id, strings.TrimSpace(out), "40", "100"); code != 1 || !strings.Contains(errOut, "no terminal") {
		t.Errorf("resize of a command without a terminal: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "input", sock, id, strings.TrimSpace(out)); code != 1 || !strings.Contains(errOut, "open stdin") {
		t.Errorf("input to a command without an open stdin: %d %q", code, errOut)
	}
	if out, errOut, code := e.run("", "sandbox", "snapshot", sock, id, "cli-snap"); code != 0 || !strings.HasPrefix(out, "cli-snap@") {
		t.Errorf("snapshot: %d %q %q", code, out, errOut)
	}
	if out, _, code := e.run("", "sandbox", "templates", sock); code != 0 || !strings.Contains(out, "cli-snap") || !strings.Contains(out, "host") {
		t.Errorf("templates: %d %q", code, out)
	}
	for _, act := range []string{"pause", "resume", "reset"} {
		if out, errOut, code := e.run("", "sandbox", act, sock, id); code != 0 || out != id+" running\n" && !(act == "pause" && out == id+" paused\n") {
			t.Errorf("%s: %d %q %q", act, code, out, errOut)
		}
	}
	if out, _, _ := e.run("", "sandbox", "files", sock, id, "/workspace"); strings.Contains(out, "link") {
		t.Errorf("files survived the reset: %q", out)
	}
	if _, errOut, code := e.run("", "sandbox", "rm", sock, id); code != 0 {
		t.Errorf("rm: %d %q", code, errOut)
	}
	if out, _, _ := e.run("", "sandbox", "get", sock, id); !strings.Contains(out, "stopped") {
		t.Errorf("get after rm: %q", out)
	}
}

// The task verbs against a real daemon and a real git repository.
func TestTaskCLIAgainstDaemon(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	repo := t.TempDir()
	gitc := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	gitc("init", "-q")
	_ = os.WriteFile(filepath.Join(repo, "f.txt"), []byte("one\n"), 0o644)
	gitc("add", ".")
	gitc("commit", "-qm", "base")
	out, errOut, code := e.run("", "task", "start", sock, "--repo", repo, "--scope", "f.txt", "--test", "grep -q two f.txt")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "t-") {
		t.Fatalf("start: %d %q %q", code, out, errOut)
	}
	if _, _, code := e.run("", "task", "test", sock, id); code != 1 {
		t.Errorf("test before the change: exit %d, want 1", code)
	}
	// other.txt is outside the scope: the sandbox refuses the write even
	// though this daemon's policy lets the command through
	if _, errOut, code := e.run("", "task", "exec", id, sock, "--", "/bin/sh", "-c", "echo two > f.txt; echo x > other.txt"); code != 2 || !strings.Contains(errOut, "Permission denied") {
		t.Fatalf("exec: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "task", "test", sock, id); code != 0 || !strings.Contains(errOut, "tests passed") {
		t.Errorf("test after the change: %d %q", code, errOut)
	}
	out, errOut, code = e.run("", "task", "diff", sock, id)
	if code != 0 || !strings.Contains(out, "+two") || strings.Contains(out, "other.txt") || strings.Contains(errOut, "outside the task's scope") {
		t.Errorf("diff: %d %q %q", code, out, errOut)
	}
	out, errOut, code = e.run("", "task", "finish", sock, id)
	if code != 0 || !strings.Contains(out, "tests passed, 1 files changed") {
		t.Fatalf("finish: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("", "task", "diff", sock, id); code != 1 || !strings.Contains(errOut, "conflict") {
		t.Errorf("diff of a finished task: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "task", "start", sock); code != 2 || !strings.Contains(errOut, "give --repo or --bundle") {
		t.Errorf("start without --repo: %d %q", code, errOut)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TCP with API keys: keys made on the socket, required on TCP.
func TestServeTCPWithAPIKeys(t *testing.T) {
	e := newEnv(t)
	addr := freePort(t)
	d := e.startDaemon(t, "--listen", addr)
	sock := "--socket=" + d.sock
	out, errOut, code := e.run("", "apikey", "create", sock, "--name", "ci")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "ak_") || !strings.Contains(errOut, "shown once") {
		t.Fatalf("apikey create: %d %q %q", code, out, errOut)
	}
	get := func(path string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/sandboxes", nil); code != 401 || !strings.Contains(body, "unauthenticated") {
		t.Errorf("no key: %d %s", code, body)
	}
	if code, _ := get("/v1/sandboxes", map[string]string{"Authorization": "Bearer ak_0000"}); code != 401 {
		t.Errorf("wrong key: %d", code)
	}
	if code, _ := get("/v1/sandboxes", map[string]string{"Authorization": "Bearer " + key}); code != 200 {
		t.Errorf("bearer key: %d", code)
	}
	if code, _ := get("/v1/health", map[string]string{"X-API-KEY": key}); code != 200 {
		t.Errorf("X-API-KEY: %d", code)
	}
	if code, body := get("/v1/apikeys", map[string]string{"Authorization": "Bearer " + key}); code != 403 {
		t.Errorf("key management over TCP: %d %s", code, body)
	}
	// the SDK over TCP
	cl, err := sdk.New(sdk.WithBaseURL("http://"+addr), sdk.WithAPIKey(key))
	if err != nil {
		t.Fatal(err)
	}
	// a remote client cannot make the daemon clone host paths or use ssh
	for _, repo := range []string{t.TempDir(), "/root", "ssh://localhost/x", "file:///etc", "git@host:x"} {
		if _, err := cl.StartTask(context.Background(), sdk.TaskRequest{Repo: repo}); !sdk.IsDenied(err) {
			t.Errorf("remote task from %q: %v, want denied", repo, err)
		}
	}
	sb, err := cl.CreateSandbox(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if st, err := cl.Exec(context.Background(), sb.ID, sdk.ExecRequest{Argv: []string{"echo", "over tcp"}}, &buf, nil); err != nil || st.Code != 0 || buf.String() != "over tcp\n" {
		t.Errorf("exec over TCP: %v %+v %q", err, st, buf.String())
	}
	_ = cl.DestroySandbox(context.Background(), sb.ID)
	out, _, _ = e.run("", "apikey", "ls", sock, "--json")
	var keys []struct{ ID, Name string }
	_ = json.Unmarshal([]byte(out), &keys)
	if len(keys) != 1 || keys[0].Name != "ci" || strings.Contains(out, key) {
		t.Fatalf("apikey ls: %q", out)
	}
	// The record names the key that acted, by its id.
	if q, _, _ := e.run("", "audit", "query", sock, "--kind", "sandbox.create", "--json"); !strings.Contains(q, `"apikey:`+keys[0].ID+`"`) {
		t.Errorf("the audit record does not name the key: %s", q)
	}
	if _, errOut, code := e.run("", "apikey", "rm", sock, keys[0].ID); code != 0 {
		t.Fatalf("apikey rm: %d %q", code, errOut)
	}
	if code, _ := get("/v1/sandboxes", map[string]string{"Authorization": "Bearer " + key}); code != 401 {
		t.Errorf("revoked key: %d", code)
	}
}

// The policy through the CLI, against a real daemon with the default
// policy: a denial, a held command, its approval, and the grant.
func TestPolicyCLIAgainstDaemon(t *testing.T) {
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
	if _, errOut, code := e.run("", "sandbox", "exec", sock, id, "--", "cat", "/workspace/.env"); code != 126 || !strings.Contains(errOut, "policy_denied") || !strings.Contains(errOut, "class:secret") {
		t.Fatalf("denied: %d %q", code, errOut)
	}
	_, errOut, code := e.run("", "sandbox", "exec", sock, "--no-approval-wait", id, "--", "rm", "-rf", "/workspace/old")
	if code != 126 || !strings.Contains(errOut, "airlock approve ap-") {
		t.Fatalf("held: %d %q", code, errOut)
	}
	apID := errOut[strings.Index(errOut, "airlock approve ")+len("airlock approve "):]
	apID = apID[:strings.IndexAny(apID, " '")]
	out, _, code = e.run("", "approvals", sock)
	if code != 0 || !strings.Contains(out, apID) || !strings.Contains(out, "rm -rf /workspace/old") || !strings.Contains(out, "destructive") {
		t.Fatalf("approvals: %d %q", code, out)
	}
	if out, errOut, code := e.run("", "approve", sock, "--for", "10m", apID); code != 0 || !strings.Contains(out, "approved "+apID) {
		t.Fatalf("approve: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "exec", sock, "--no-approval-wait", id, "--", "rm", "-rf", "/workspace/old"); code != 0 {
		t.Fatalf("granted: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "deny", sock, apID); code != 2 || !strings.Contains(errOut, "--reason is required") {
		t.Fatalf("deny without reason: %d %q", code, errOut)
	}
	if out, _, code := e.run("", "policy", "check", "--policy", pf, "--", "git push --force origin main"); code != 3 || !strings.Contains(out, "no-force-push") {
		t.Fatalf("policy check: %d %q", code, out)
	}
}

// The review plane through the CLI and the real binary: export and
// verify a bundle, query and verify the record (through the daemon and,
// with the daemon stopped, on the database file), catch an edit.
func TestAuditAndBundleCLI(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git: %v %s", err, out)
		}
	}
	out, errOut, code := e.run("", "task", "start", sock, "--repo", repo, "--test", "true")
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("start: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "task", "exec", id, sock, "--", "/bin/sh", "-c", "echo hello > notes.txt"); code != 0 {
		t.Fatalf("exec: %d %q", code, errOut)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "b.tar.gz")
	if _, errOut, code := e.run("", "task", "export", sock, id, "-o", file); code != 0 {
		t.Fatalf("export: %d %q", code, errOut)
	}
	keyFile := filepath.Join(e.data, "audit.key")
	if out, _, code := e.run("", "bundle", "verify", file); code != 0 || !strings.Contains(out, "which was not checked") {
		t.Fatalf("unpinned verify does not say so: %d %q", code, out)
	}
	if out, errOut, code := e.run("", "bundle", "verify", "--key-file", keyFile, file); code != 0 || !strings.HasPrefix(out, "ok: task "+id) || strings.Contains(out, "not checked") {
		t.Fatalf("bundle verify: %d %q %q", code, out, errOut)
	}
	// A reviewer verifies with the public key, never the private one: as
	// 'audit pubkey' prints it, as the daemon publishes it, or on argv.
	pub, errOut, code := e.run("", "audit", "pubkey", sock)
	published, _ := os.ReadFile(filepath.Join(e.data, "audit.pub"))
	if code != 0 || len(strings.TrimSpace(pub)) != 44 || pub != string(published) {
		t.Fatalf("audit pubkey: %d %q %q, published %q", code, pub, errOut, published)
	}
	if fi, err := os.Stat(filepath.Join(e.data, "audit.pub")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("audit.pub: %v %v", fi, err)
	}
	pubFile := filepath.Join(dir, "airlock.pub")
	_ = os.WriteFile(pubFile, []byte(pub), 0o644)
	for _, args := range [][]string{{"--key-file", pubFile}, {"--key", strings.TrimSpace(pub)}} {
		if out, errOut, code := e.run("", append(append([]string{"bundle", "verify"}, args...), file)...); code != 0 || !strings.HasPrefix(out, "ok: task "+id) || strings.Contains(out, "not checked") {
			t.Errorf("bundle verify %v: %d %q %q", args, code, out, errOut)
		}
	}
	other := filepath.Join(dir, "other.pub")
	_ = os.WriteFile(other, []byte("11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"), 0o644)
	if _, errOut, code := e.run("", "bundle", "verify", "--key-file", other, file); code != 1 || !strings.Contains(errOut, "refused") {
		t.Errorf("another key verified the bundle: %d %q", code, errOut)
	}
	unpacked := filepath.Join(dir, "unpacked")
	if _, errOut, code := e.run("", "task", "export", sock, id, "-o", unpacked); code != 0 {
		t.Fatalf("export to a directory: %d %q", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(unpacked, "patch.diff")); err != nil || !strings.Contains(string(b), "+hello") {
		t.Fatalf("unpacked patch: %v %q", err, b)
	}
	// A bundle changed after signing is refused.
	b, _ := os.ReadFile(file)
	b[len(b)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.tar.gz")
	_ = os.WriteFile(bad, b, 0o600)
	if _, errOut, code := e.run("", "bundle", "verify", bad); code != 1 || !strings.Contains(errOut, "bundle refused") {
		t.Fatalf("a damaged bundle: %d %q", code, errOut)
	}
	if out, _, code := e.run("", "audit", "query", sock, "--task", id, "--kind", "exec"); code != 0 || !strings.Contains(out, "exec.start") || !strings.Contains(out, "exec.end") {
		t.Fatalf("audit query: %d %q", code, out)
	}
	if out, _, code := e.run("", "audit", "verify", sock); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("audit verify: %d %q", code, out)
	}
	if _, _, code := e.run("", "purge", sock); code != 2 {
		t.Fatalf("purge without --older-than: %d", code)
	}
	// Stop the daemon (it signs its head), then verify the file itself.
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
	db := filepath.Join(e.data, "airlock.db")
	if out, errOut, code := e.run("", "audit", "verify", "--db", db); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("offline verify: %d %q %q", code, out, errOut)
	}
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"DROP TRIGGER audit_no_delete", "DELETE FROM audit_events WHERE seq = (SELECT max(seq) FROM audit_events)"} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	if out, _, code := e.run("", "audit", "verify", "--db", db); code != 1 || !strings.Contains(out, "truncated") {
		t.Fatalf("a cut tail: %d %q", code, out)
	}
	// A daemon refuses to continue a log cut short, or one whose
	// checkpoint is gone.
	_, errOut, code = e.run("", "serve", "--socket", d.sock)
	if code == 0 || !strings.Contains(errOut, "truncated") || !strings.Contains(errOut, "--accept-audit-gap") {
		t.Fatalf("serve on a truncated log: %d %q", code, errOut)
	}
	cp := filepath.Join(e.data, "audit-head.json")
	os.Remove(cp)
	if out, _, code := e.run("", "audit", "verify", "--db", db); code != 1 || !strings.Contains(out, "is missing") {
		t.Fatalf("offline verify without the checkpoint: %d %q", code, out)
	}
	if _, errOut, code := e.run("", "serve", "--socket", d.sock); code == 0 || !strings.Contains(errOut, "missing") {
		t.Fatalf("serve without the checkpoint: %d %q", code, errOut)
	}
	// The operator accepts the gap: it is on record, and the log verifies
	// from the new checkpoint on.
	d2 := e.startDaemon(t, "--accept-audit-gap", "restored from backup")
	if out, _, code := e.run("", "audit", "query", "--socket", d2.sock, "--kind", "audit.gap_accepted", "--json"); code != 0 || !strings.Contains(out, "restored from backup") {
		t.Fatalf("the accepted gap is not on record: %d %q", code, out)
	}
}

// The published MCP TypeScript SDK (test/node, installed by
// scripts/setup.sh) drives airlock's MCP server over stdio (`airlock
// mcp`) and over streamable HTTP (/mcp on the daemon's TCP listener, with
// an API key), against a real daemon with the default policy.
func TestMCPWithTheRealClient(t *testing.T) {
	node, err := exec.LookPath("node")
	mods, _ := filepath.Abs("../../test/node/node_modules/@modelcontextprotocol/sdk")
	if _, serr := os.Stat(mods); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node or test/node/node_modules is missing: run scripts/setup.sh")
		}
		t.Skip("node or test/node/node_modules is missing: run scripts/setup.sh")
	}
	e := newEnv(t)
	pf := filepath.Join(filepath.Dir(e.state), "default.yaml")
	out, _, _ := e.run("", "policy", "default")
	_ = os.WriteFile(pf, []byte(out), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := e.startDaemon(t, "--policy", pf, "--listen", addr)
	key, _, code := e.run("", "apikey", "create", "--socket", d.sock, "--name", "mcp")
	if code != 0 {
		t.Fatal("apikey create")
	}
	repo := t.TempDir()
	_ = os.WriteFile(filepath.Join(repo, "README"), []byte("broken\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git: %v %s", err, out)
		}
	}
	script, _ := filepath.Abs("../../test/node/mcp_client.mjs")
	for _, mode := range []string{"stdio", "http"} {
		cmd := exec.Command(node, script, mode)
		cmd.Env = append(os.Environ(), "AIRLOCK_BIN="+airlockBin, "AIRLOCK_SOCKET="+d.sock, "MCP_URL=http://"+addr+"/mcp",
			"AIRLOCK_KEY="+strings.TrimSpace(key), "REPO="+repo, "AIRLOCK_STATE_DIR="+e.state, "AIRLOCK_DATA_DIR="+e.data)
		var o, er bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &er
		if err := cmd.Run(); err != nil || !strings.Contains(o.String(), `"ok":true`) {
			t.Fatalf("%s: %v\nstdout: %s\nstderr: %s\ndaemon: %s", mode, err, o.String(), er.String(), d.log)
		}
		t.Logf("%s: %s", mode, strings.TrimSpace(o.String()))
	}
	// Both clients' work is in the record, and both were held by the
	// policy (an approval ends with its sandbox: any state).
	out, _, _ = e.run("", "approvals", "--socket", d.sock, "--state", "all")
	if strings.Count(out, "/bin/sh -c 'rm -rf /workspace/old'") != 2 || !strings.Contains(out, "requested by apikey") || !strings.Contains(out, "requested by operator") {
		t.Fatalf("approvals: %q", out)
	}
}

// Clients that open many TCP connections and leave them idle (no key is
// needed for that) cannot use up the daemon's descriptors: the unix socket
// keeps answering (found in an interface review: 20,000 idle connections
// made accept fail on every listener).
func TestServeIdleTCPClientsCannotStarveTheSocket(t *testing.T) {
	e := newEnv(t)
	e.prefix = []string{"prlimit", "--nofile=256:256", "--"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := e.startDaemon(t, "--listen", addr)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 400; i++ { // more than the daemon has descriptors
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		// one request (refused: no key), then the connection stays open
		io.WriteString(c, "GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	time.Sleep(500 * time.Millisecond) // let the daemon accept what it will
	client := &http.Client{Transport: d.client.Transport, Timeout: 5 * time.Second}
	for i := 0; i < 3; i++ {
		resp, err := client.Get("http://airlock/v1/health")
		if err != nil {
			t.Fatalf("the unix socket under 400 idle TCP connections: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("health: %d", resp.StatusCode)
		}
	}
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/fd")
	if len(fds) > 200 {
		t.Errorf("the daemon holds %d descriptors for idle connections", len(fds))
	}
}
