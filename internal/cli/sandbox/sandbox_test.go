package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/sdk"
)

// sbxDaemon is a fake airlock daemon for the sandbox verbs: the routes of
// docs/api.md over an in-memory map, on a real unix socket. It needs no
// root.
type sbxDaemon struct {
	sock string

	mu        sync.Mutex
	n         int
	sandboxes map[string]*sdk.Sandbox
	order     []string
	execs     map[string][]*sdk.Exec
	outputs   map[string][2][]byte
	lastBody  string
}

// last is the body of the last request that had one.
func (d *sbxDaemon) last() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastBody
}

func newSbxDaemon(t *testing.T) *sbxDaemon {
	t.Helper()
	dir := t.TempDir()
	if len(dir) > 80 { // unix socket paths are short
		var err error
		if dir, err = os.MkdirTemp("/tmp", "sbx"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	d := &sbxDaemon{sock: filepath.Join(dir, "airlock.sock"), sandboxes: map[string]*sdk.Sandbox{}, execs: map[string][]*sdk.Exec{}, outputs: map[string][2][]byte{}}
	l, err := net.Listen("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(d.mux())
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return d
}

// run calls cmdSandbox against the fake daemon.
func (d *sbxDaemon) run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = CmdSandbox(append([]string{args[0], "--socket", d.sock}, args[1:]...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func sbxJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func sbxError(w http.ResponseWriter, status int, code, msg string) {
	sbxJSON(w, status, map[string]string{"code": code, "message": msg})
}

func (d *sbxDaemon) body(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	d.lastBody = string(b)
	d.mu.Unlock()
	return b
}

func (d *sbxDaemon) sandbox(w http.ResponseWriter, r *http.Request) *sdk.Sandbox {
	d.mu.Lock()
	defer d.mu.Unlock()
	sb := d.sandboxes[r.PathValue("id")]
	if sb == nil {
		sbxError(w, 404, "not_found", fmt.Sprintf("sandbox %q not found", r.PathValue("id")))
	}
	return sb
}

func (d *sbxDaemon) mux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Template   string            `json:"template"`
			Limits     sdk.Limits        `json:"limits"`
			TTLSeconds int64             `json:"ttl_seconds"`
			Labels     map[string]string `json:"labels"`
		}
		if err := json.Unmarshal(d.body(r), &req); err != nil {
			sbxError(w, 400, "invalid", err.Error())
			return
		}
		if req.Template == "" {
			req.Template = "host"
		}
		lim := sdk.Limits{MemoryBytes: 512 << 20, Pids: 256, DiskBytes: 1 << 30, TmpBytes: 256 << 20, Inodes: 200000, NoFile: 4096}
		if req.Limits.MemoryBytes != 0 {
			lim.MemoryBytes = req.Limits.MemoryBytes
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.n++
		now := time.Now().UTC()
		sb := &sdk.Sandbox{ID: fmt.Sprintf("sb%d", d.n), State: sdk.StateRunning, Backend: "native", Template: req.Template,
			TemplateVersion: "4ed206e18971", Labels: req.Labels, Limits: lim, Created: now,
			Isolation: sdk.Isolation{Boundary: "linux namespaces + seccomp + landlock", Namespaces: []string{"user", "mount", "pid"}, Seccomp: "default", LandlockABI: 7, Cgroup: "v1"}}
		if req.TTLSeconds > 0 {
			sb.Expires = now.Add(time.Duration(req.TTLSeconds) * time.Second)
		}
		d.sandboxes[sb.ID] = sb
		d.order = append(d.order, sb.ID)
		sbxJSON(w, 201, sb)
	})
	m.HandleFunc("GET /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		out := []*sdk.Sandbox{}
		for i := len(d.order) - 1; i >= 0; i-- {
			if sb := d.sandboxes[d.order[i]]; r.URL.Query().Get("state") == "" || sb.State == r.URL.Query().Get("state") {
				out = append(out, sb)
			}
		}
		sbxJSON(w, 200, map[string]any{"sandboxes": out})
	})
	m.HandleFunc("GET /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if sb := d.sandbox(w, r); sb != nil {
			sbxJSON(w, 200, sb)
		}
	})
	m.HandleFunc("DELETE /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if sb := d.sandbox(w, r); sb != nil {
			d.mu.Lock()
			sb.State, sb.StopReason, sb.Stopped, sb.Expires = sdk.StateStopped, sdk.StopDestroyed, time.Now(), time.Time{}
			d.mu.Unlock()
			w.WriteHeader(204)
		}
	})
	m.HandleFunc("POST /v1/sandboxes/{id}/timeout", func(w http.ResponseWriter, r *http.Request) {
		sb := d.sandbox(w, r)
		if sb == nil {
			return
		}
		var req struct {
			TTLSeconds int64 `json:"ttl_seconds"`
		}
		_ = json.Unmarshal(d.body(r), &req)
		d.mu.Lock()
		defer d.mu.Unlock()
		sb.Expires = time.Time{}
		if req.TTLSeconds > 0 {
			sb.Expires = time.Now().Add(time.Duration(req.TTLSeconds) * time.Second)
		}
		sbxJSON(w, 200, sb)
	})
	m.HandleFunc("GET /v1/sandboxes/{id}/execs", func(w http.ResponseWriter, r *http.Request) {
		if sb := d.sandbox(w, r); sb != nil {
			d.mu.Lock()
			defer d.mu.Unlock()
			sbxJSON(w, 200, map[string]any{"execs": append([]*sdk.Exec{}, d.execs[sb.ID]...)})
		}
	})
	m.HandleFunc("GET /v1/sandboxes/{id}/execs/{eid}/output", func(w http.ResponseWriter, r *http.Request) {
		if d.sandbox(w, r) == nil {
			return
		}
		d.mu.Lock()
		out, ok := d.outputs[r.PathValue("eid")]
		d.mu.Unlock()
		if !ok {
			sbxError(w, 404, "not_found", "no such exec")
			return
		}
		if r.URL.Query().Get("stream") == "stderr" {
			w.Write(out[1])
		} else {
			w.Write(out[0])
		}
	})
	m.HandleFunc("POST /v1/sandboxes/{id}/exec", d.exec)
	return m
}

// exec runs a made-up command:
//
//	outerr          stdout "out1 ", stderr "err", stdout "out2"; exit 3
//	echo ARGS       prints ARGS
//	request         prints the request it got
//	cat             prints its stdin
//	limit L CODE    exits CODE with limit L hit
//	truncated       exits 0 with truncated output
//	missing         not found (404 before the stream, exit 127 recorded)
//	noexec          not executable (400 before the stream, exit 126 recorded)
func (d *sbxDaemon) exec(w http.ResponseWriter, r *http.Request) {
	sb := d.sandbox(w, r)
	if sb == nil {
		return
	}
	body := d.body(r)
	var req struct {
		Argv  []string `json:"argv"`
		Stdin []byte   `json:"stdin"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Argv) == 0 {
		sbxError(w, 400, "invalid", "bad request")
		return
	}
	d.mu.Lock()
	d.n++
	rec := &sdk.Exec{ID: fmt.Sprintf("e-%d", d.n), SandboxID: sb.ID, Argv: req.Argv, Started: time.Now().UTC()}
	d.execs[sb.ID] = append(d.execs[sb.ID], rec)
	d.mu.Unlock()
	switch req.Argv[0] {
	case "missing", "noexec":
		status, code, kind, msg := 404, 127, "not_found", "command not found"
		if req.Argv[0] == "noexec" {
			status, code, kind, msg = 400, 126, "invalid", "permission denied"
		}
		d.mu.Lock()
		rec.Ended, rec.Status, rec.Error = time.Now().UTC(), &sdk.ExitStatus{Code: code}, kind+": "+msg
		d.mu.Unlock()
		sbxError(w, status, kind, req.Argv[0]+": "+msg)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	var outs [2]bytes.Buffer
	event := func(v map[string]any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		w.(http.Flusher).Flush()
	}
	chunk := func(i int, s []byte) {
		outs[i].Write(s)
		event(map[string]any{"type": [2]string{"stdout", "stderr"}[i], "data": s})
	}
	event(map[string]any{"type": "start", "exec_id": rec.ID, "pid": 2})
	st := sdk.ExitStatus{}
	switch req.Argv[0] {
	case "outerr":
		chunk(0, []byte("out1 "))
		chunk(1, []byte("err"))
		chunk(0, []byte("out2"))
		st.Code = 3
	case "echo":
		chunk(0, []byte(strings.Join(req.Argv[1:], " ")+"\n"))
	case "request":
		chunk(0, body)
	case "cat":
		chunk(0, req.Stdin)
	case "limit":
		st.Limit = req.Argv[1]
		fmt.Sscan(req.Argv[2], &st.Code)
	case "truncated":
		chunk(0, []byte("xx"))
		st.StdoutTruncated = true
	default:
		event(map[string]any{"type": "error", "code": "internal", "message": "unknown fake command"})
		return
	}
	st.StdoutBytes, st.StderrBytes, st.Duration = int64(outs[0].Len()), int64(outs[1].Len()), 1234*time.Millisecond
	d.mu.Lock()
	rec.Ended, rec.Status = time.Now().UTC(), &st
	d.outputs[rec.ID] = [2][]byte{outs[0].Bytes(), outs[1].Bytes()}
	d.mu.Unlock()
	event(map[string]any{"type": "exit", "status": st})
}

func TestSandboxCreate(t *testing.T) {
	d := newSbxDaemon(t)
	code, out, errOut := d.run("create", "--memory", "256M", "--pids", "64", "--cpus", "1.5", "--disk", "2G", "--tmp", "64M",
		"--ttl", "90m", "--label", "task=t1", "--label", "who=me", "--env", "A=1", "--template", "host")
	if code != 0 || errOut != "" || out != "sb1\n" {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(d.last()), &req); err != nil {
		t.Fatal(err)
	}
	lim := req["limits"].(map[string]any)
	if req["template"] != "host" || req["ttl_seconds"] != float64(5400) || fmt.Sprint(req["labels"]) != "map[task:t1 who:me]" ||
		fmt.Sprint(req["env"]) != "[A=1]" || lim["memory_bytes"] != float64(256<<20) || lim["pids"] != float64(64) ||
		lim["cpus"] != 1.5 || lim["disk_bytes"] != float64(2<<30) || lim["tmp_bytes"] != float64(64<<20) {
		t.Fatalf("create request %s", d.last())
	}

	// no flags: an empty request
	if code, out, _ := d.run("create"); code != 0 || out != "sb2\n" || d.last() != "{}" {
		t.Fatalf("create: %d %q, sent %s", code, out, d.last())
	}

	code, out, _ = d.run("create", "--json")
	var sb sdk.Sandbox
	if err := json.Unmarshal([]byte(out), &sb); code != 0 || err != nil || sb.ID != "sb3" || sb.State != "running" {
		t.Fatalf("create --json: %d %v %q", code, err, out)
	}
}

func TestSandboxLsAndGet(t *testing.T) {
	d := newSbxDaemon(t)
	if code, out, _ := d.run("ls", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty ls --json: %d %q", code, out)
	}
	d.run("create", "--ttl", "1h")
	d.run("create", "--label", "a=b")
	if code, _, errOut := d.run("rm", "sb2"); code != 0 {
		t.Fatal(errOut)
	}

	code, out, _ := d.run("ls", "--json")
	var sbs []sdk.Sandbox
	if err := json.Unmarshal([]byte(out), &sbs); code != 0 || err != nil || len(sbs) != 2 || sbs[0].ID != "sb2" || sbs[1].ID != "sb1" {
		t.Fatalf("ls --json: %d %v %q", code, err, out)
	}
	code, out, _ = d.run("ls", "--state", "running", "--json")
	if err := json.Unmarshal([]byte(out), &sbs); code != 0 || err != nil || len(sbs) != 1 || sbs[0].ID != "sb1" {
		t.Fatalf("ls --state running: %d %v %q", code, err, out)
	}

	code, out, _ = d.run("ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ID STATE TEMPLATE CREATED EXPIRES" {
		t.Fatalf("ls: %d\n%s", code, out)
	}
	if f := strings.Fields(lines[1]); f[0] != "sb2" || f[1] != "stopped" || f[2] != "(destroyed)" || f[len(f)-1] != "-" {
		t.Fatalf("ls row %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[0] != "sb1" || f[1] != "running" || f[2] != "host" || f[len(f)-2] != "in" || !strings.HasPrefix(f[len(f)-1], "59m") && f[len(f)-1] != "1h" {
		t.Fatalf("ls row %q", lines[2])
	}

	// flags before or after the id
	for _, args := range [][]string{{"get", "sb1", "--json"}, {"get", "--json", "sb1"}} {
		code, out, _ = d.run(args...)
		var sb sdk.Sandbox
		if err := json.Unmarshal([]byte(out), &sb); code != 0 || err != nil || sb.ID != "sb1" || sb.Limits.MemoryBytes != 512<<20 {
			t.Fatalf("%v: %d %v %q", args, code, err, out)
		}
	}
	code, out, _ = d.run("get", "sb2")
	for _, want := range []string{"ID:", "sb2", "State:", "stopped (destroyed)", "Template:", "host (version 4ed206e18971)", "Labels:", "a=b", "Memory:", "512MiB", "Landlock:", "ABI 7", "Stopped:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("get: %d, no %q in\n%s", code, want, out)
		}
	}

	code, out, errOut := d.run("get", "nope")
	if code != 1 || out != "" || errOut != "airlock sandbox get: not_found: sandbox \"nope\" not found\n" {
		t.Fatalf("get unknown: %d %q %q", code, out, errOut)
	}
}

func TestSandboxExec(t *testing.T) {
	d := newSbxDaemon(t)
	d.run("create")

	// streams stdout and stderr apart; exits with the command's status
	code, out, errOut := d.run("exec", "sb1", "--", "outerr")
	if code != 3 || out != "out1 out2" || errOut != "err" {
		t.Fatalf("exec: %d %q %q", code, out, errOut)
	}
	// without "--", CMD's flags are CMD's
	code, out, _ = d.run("exec", "sb1", "echo", "-n", "--json", "x")
	if code != 0 || out != "-n --json x\n" {
		t.Fatalf("exec without --: %d %q", code, out)
	}
	// flags before and after ID
	code, out, errOut = d.run("exec", "--env", "A=1", "sb1", "--cwd", "/tmp", "--timeout", "1500ms", "--output-limit", "1M", "--", "request", "a b")
	var req map[string]any
	if err := json.Unmarshal([]byte(out), &req); code != 0 || err != nil {
		t.Fatalf("exec request: %d %v %q %q", code, err, out, errOut)
	}
	if fmt.Sprint(req["argv"]) != "[request a b]" || fmt.Sprint(req["env"]) != "[A=1]" || req["cwd"] != "/tmp" || req["timeout_ms"] != float64(1500) || req["output_limit"] != float64(1<<20) || req["stdin"] != nil {
		t.Fatalf("exec request %v", req)
	}
	// --stdin sends stdin
	old := sandboxStdin
	sandboxStdin = strings.NewReader("from stdin")
	defer func() { sandboxStdin = old }()
	if code, out, _ = d.run("exec", "--stdin", "sb1", "cat"); code != 0 || out != "from stdin" {
		t.Fatalf("exec --stdin: %d %q", code, out)
	}

	// limits are named on stderr
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--timeout", "2s", "sb1", "limit", "timeout", "124"}, 124, "airlock: command timed out after 2s and was killed\n"},
		{[]string{"sb1", "limit", "memory", "137"}, 137, "airlock: memory limit of 512MiB exceeded; the command was killed (the sandbox's --memory)\n"},
		{[]string{"sb1", "limit", "pids", "1"}, 1, "airlock: process limit of 256 reached (the sandbox's --pids)\n"},
		{[]string{"sb1", "limit", "disk", "1"}, 1, "airlock: sandbox disk is full (limit 1GiB for the writable layer, 256MiB for /tmp; the sandbox's --disk and --tmp)\n"},
		{[]string{"sb1", "truncated"}, 0, "airlock: output truncated (stdout 2 bytes, stderr 0 bytes; raise --output-limit)\n"},
	} {
		code, _, errOut := d.run(append([]string{"exec"}, tc.args...)...)
		if code != tc.code || errOut != tc.msg {
			t.Errorf("exec %v: %d %q, want %d %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}

	// commands that cannot start, and airlock's own failures
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"sb1", "missing"}, 127, "airlock sandbox exec: not_found: missing: command not found\n"},
		{[]string{"sb1", "noexec"}, 126, "airlock sandbox exec: invalid: noexec: permission denied\n"},
		{[]string{"nope", "echo"}, 125, "airlock sandbox exec: not_found: sandbox \"nope\" not found\n"},
		{[]string{"sb1", "unknown"}, 125, "airlock sandbox exec: internal: unknown fake command\n"},
	} {
		code, _, errOut := d.run(append([]string{"exec"}, tc.args...)...)
		if code != tc.code || errOut != tc.msg {
			t.Errorf("exec %v: %d %q, want %d %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

func TestSandboxTimeoutRmExecsOutput(t *testing.T) {
	d := newSbxDaemon(t)
	d.run("create")
	code, out, _ := d.run("timeout", "sb1", "10m")
	if code != 0 || !strings.HasPrefix(out, "sb1: expires ") || d.last() != `{"ttl_seconds":600}` {
		t.Fatalf("timeout: %d %q, sent %s", code, out, d.last())
	}
	code, out, _ = d.run("timeout", "sb1", "0", "--json")
	var sb sdk.Sandbox
	if err := json.Unmarshal([]byte(out), &sb); code != 0 || err != nil || !sb.Expires.IsZero() || d.last() != `{"ttl_seconds":0}` {
		t.Fatalf("timeout 0: %d %v %q", code, err, out)
	}

	d.run("exec", "sb1", "outerr")
	d.run("exec", "sb1", "missing")
	code, out, _ = d.run("execs", "sb1", "--json")
	var execs []sdk.Exec
	if err := json.Unmarshal([]byte(out), &execs); code != 0 || err != nil || len(execs) != 2 || execs[0].Status.Code != 3 {
		t.Fatalf("execs --json: %d %v %q", code, err, out)
	}
	code, out, _ = d.run("execs", "sb1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "1.234s") || !strings.Contains(lines[1], "exit 3") ||
		!strings.HasSuffix(lines[1], "outerr") || !strings.Contains(lines[2], "exit 127: not_found: command not found") {
		t.Fatalf("execs: %d\n%s", code, out)
	}

	if code, out, _ = d.run("output", "sb1", execs[0].ID); code != 0 || out != "out1 out2" {
		t.Fatalf("output: %d %q", code, out)
	}
	if code, out, _ = d.run("output", "--stderr", "sb1", execs[0].ID); code != 0 || out != "err" {
		t.Fatalf("output --stderr: %d %q", code, out)
	}
	if code, _, errOut := d.run("output", "sb1", "e-99"); code != 1 || errOut != "airlock sandbox output: not_found: no such exec\n" {
		t.Fatalf("output of unknown exec: %d %q", code, errOut)
	}

	// rm goes on after a failure, and says which failed
	d.run("create")
	code, out, errOut := d.run("rm", "sb1", "nope", "sb4")
	if code != 1 || out != "sb1\nsb4\n" || errOut != "airlock sandbox rm: not_found: sandbox \"nope\" not found\n" {
		t.Fatalf("rm: %d %q %q", code, out, errOut)
	}
}

func TestSandboxUsage(t *testing.T) {
	d := newSbxDaemon(t)
	for _, args := range [][]string{
		{"create", "--memory", "lots"},
		{"create", "--bogus"},
		{"create", "extra"},
		{"create", "--label", "novalue"},
		{"create", "--env", "=x"},
		{"create", "--pids", "-1"},
		{"create", "--ttl", "-1h"},
		{"ls", "extra"},
		{"get"},
		{"get", "a", "b"},
		{"exec"},
		{"exec", "sb1"},
		{"exec", "sb1", "--"},
		{"exec", "a", "b", "--", "ls"},
		{"exec", "--cwd", "rel", "sb1", "ls"},
		{"exec", "--env", "NOEQUALS", "sb1", "ls"},
		{"exec", "--timeout", "-1s", "sb1", "ls"},
		{"exec", "--nope", "sb1", "ls"},
		{"rm"},
		{"timeout", "sb1"},
		{"timeout", "sb1", "soon"},
		{"execs"},
		{"output", "sb1"},
	} {
		code, out, errOut := d.run(args...)
		if code != 2 || out != "" || errOut == "" || !strings.HasPrefix(errOut, "airlock sandbox "+args[0]+": ") {
			t.Errorf("%q: %d %q %q", args, code, out, errOut)
		}
		if strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: not one line: %q", args, errOut)
		}
	}

	var out, errOut bytes.Buffer
	if code := CmdSandbox(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage: airlock sandbox") {
		t.Errorf("no verb: %d %q", code, errOut.String())
	}
	errOut.Reset()
	if code := CmdSandbox([]string{"frob"}, &out, &errOut); code != 2 || errOut.String() != "airlock sandbox: unknown command \"frob\"; run 'airlock sandbox --help' for the list\n" {
		t.Errorf("unknown verb: %d %q", code, errOut.String())
	}
	for _, args := range [][]string{{"--help"}, {"get", "--help"}, {"get", "x", "-h"}, {"exec", "--help"}} {
		out.Reset()
		if code := CmdSandbox(args, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "usage: airlock sandbox") {
			t.Errorf("%q: %d %q", args, code, out.String())
		}
	}
	out.Reset()
	CmdSandbox([]string{"exec", "--help"}, &out, &errOut)
	if !strings.Contains(out.String(), "-socket PATH") || !strings.Contains(out.String(), "127 if CMD is not found") {
		t.Errorf("exec --help:\n%s", out.String())
	}
}

func TestSandboxNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	want := "cannot reach the airlock daemon at " + sock + ": is `airlock serve` running?\n"
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"ls"}, 1},
		{[]string{"get", "x"}, 1},
		{[]string{"create"}, 1},
		{[]string{"exec", "x", "true"}, 125},
	} {
		var out, errOut bytes.Buffer
		code := CmdSandbox(append([]string{tc.args[0], "--socket", sock}, tc.args[1:]...), &out, &errOut)
		if code != tc.code || errOut.String() != "airlock sandbox "+tc.args[0]+": "+want {
			t.Errorf("%v: %d %q", tc.args, code, errOut.String())
		}
	}
	// $AIRLOCK_SOCKET is the default
	t.Setenv("AIRLOCK_SOCKET", sock)
	var out, errOut bytes.Buffer
	if code := CmdSandbox([]string{"ls"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), sock) {
		t.Errorf("env socket: %d %q", code, errOut.String())
	}
}

func TestSandboxHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 45 * time.Second: "45s", 12*time.Minute + 5*time.Second: "12m", 3*time.Hour + 5*time.Minute: "3h5m",
		2 * time.Hour: "2h", 50 * time.Hour: "2d2h", 48 * time.Hour: "2d",
	} {
		if got := cli.HumanDuration(d); got != want {
			t.Errorf("humanDuration(%s) = %q, want %q", d, got, want)
		}
	}
	if got := shellJoin([]string{"sh", "-c", "echo it's", ""}); got != `sh -c 'echo it'\''s' ''` {
		t.Errorf("shellJoin: %s", got)
	}
}

// Days work wherever the sandbox verbs take a duration (flags and
// arguments); the CLI's other verbs are checked in cmd/airlock.
func TestSandboxDurationsTakeDays(t *testing.T) {
	d := newSbxDaemon(t)
	if code, out, errOut := d.run("create", "--ttl", "2d"); code != 0 {
		t.Fatalf("create --ttl 2d: %d %q %q", code, out, errOut)
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(d.last()), &req); err != nil || req["ttl_seconds"] != float64(2*86400) {
		t.Errorf("create --ttl 2d sent %s", d.last())
	}
	if code, out, errOut := d.run("timeout", "sb1", "1d"); code != 0 || !strings.Contains(d.last(), `"ttl_seconds":86400`) {
		t.Errorf("timeout sb1 1d: %d %q %q, sent %s", code, out, errOut, d.last())
	}
}
