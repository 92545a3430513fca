package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/wire"
)

// leakSecret is a granted secret an agent plants in records. Letters and
// digits only, so that it fits an environment variable's name and a path.
const leakSecret = "Zq7vK2pXw9LmN4tR8sYb3HcJ6dFg"

// recordDaemon runs with the audit log, the redactor and the secret
// store, as airlock serve does, and the permissive policy.
func recordDaemon(t *testing.T) *daemon {
	t.Helper()
	return newDaemonWith(t, func(c *stack.Config) {
		red := redact.New()
		log, err := audit.Open(context.Background(), audit.Config{Store: c.Store, Redactor: red, KeyFile: filepath.Join(t.TempDir(), "audit.key")})
		if err != nil {
			t.Fatal(err)
		}
		c.Policy, c.Audit, c.Redactor = allowAll, log, red
		c.SecretsKey = filepath.Join(t.TempDir(), "secrets.key")
	})
}

// get answers a GET's body; it fails the test unless 200.
func (d *daemon) get(path string) []byte {
	d.t.Helper()
	resp, err := d.client.Get("http://airlock" + path)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		d.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return b
}

// everyOutput is everything the daemon shows or exports of a task and a
// sandbox: the API's records, the audit query, and every entry of the
// signed bundle (report.html unescaped).
func (d *daemon) everyOutput(taskID, sandboxID, otherSandbox string) map[string][]byte {
	d.t.Helper()
	out := map[string][]byte{}
	for _, p := range []string{"/v1/sandboxes/" + sandboxID + "/execs", "/v1/sandboxes/" + sandboxID, "/v1/sandboxes/" + otherSandbox, "/v1/sandboxes",
		"/v1/tasks/" + taskID, "/v1/tasks", "/v1/audit?sandbox=" + sandboxID, "/v1/audit?sandbox=" + otherSandbox} {
		out["GET "+p] = d.get(p)
	}
	var list struct{ Execs []sandbox.Exec }
	d.do("GET", "/v1/sandboxes/"+sandboxID+"/execs", nil, &list)
	for _, e := range list.Execs {
		p := "/v1/sandboxes/" + sandboxID + "/execs/" + e.ID
		out["GET "+p] = d.get(p)
	}
	for name, data := range untarAll(d.t, d.bundle(taskID)) {
		if strings.HasSuffix(name, ".html") {
			data = []byte(html.UnescapeString(string(data)))
		}
		out["bundle "+name] = data
	}
	return out
}

// A granted secret planted by the agent in any field of a request (the
// working directory, argv, a variable's name or value, a terminal name,
// a path it writes, a label, the task's prompt) is stored and shown
// nowhere: not in an exec record, the exec list, the audit query, the
// sandbox and task records, nor the bundle's commands.jsonl, manifest or
// report.html (issue 17.2: the cwd was stored and served raw).
func TestSecretPlantedInAnyRecordFieldIsRedacted(t *testing.T) {
	d := recordDaemon(t)
	if code := d.do("PUT", "/v1/secrets/API_TOKEN", map[string]string{"value": leakSecret}, nil); code != 200 {
		t.Fatalf("set secret: %d", code)
	}
	repo, first := sampleRepo(t)
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first, "test": "sh test.sh", "prompt": "fix calc with key " + leakSecret}, &task); code != 201 {
		t.Fatalf("start: %d", code)
	}
	sb := task.SandboxID
	if code := d.do("POST", "/v1/secrets/API_TOKEN/grants", map[string]any{"sandbox_id": sb, "hosts": []string{"deploy.example.test"}, "ttl_seconds": 600}, nil); code != 201 {
		t.Fatalf("grant: %d", code)
	}
	if code, out, _ := d.sh(sb, `mkdir -p "/workspace/src/$API_TOKEN" && test "$API_TOKEN" = `+leakSecret+` && echo granted`, nil); code != 200 || !strings.Contains(out, "granted") {
		t.Fatalf("the grant: %d %q", code, out)
	}
	var other sandbox.Sandbox
	exec := func(req wire.ExecRequest) func() {
		return func() {
			if code, _, e := d.exec(sb, req); code != 200 && code != 400 && code != 404 {
				t.Fatalf("exec %+v: %d %+v", req, code, e)
			}
		}
	}
	fields := []struct {
		name  string
		plant func()
		// shown is what the field's record must show instead (so that
		// the test cannot pass by recording nothing).
		shown string
	}{
		{"task prompt", func() {}, "fix calc with key [REDACTED"},
		{"argv", exec(wire.ExecRequest{Argv: []string{"/bin/echo", "arg-" + leakSecret}}), "arg-[REDACTED"},
		{"cwd", exec(wire.ExecRequest{Argv: []string{"/bin/true"}, Cwd: "/workspace/src/" + leakSecret}), "/workspace/src/[REDACTED"},
		{"cwd that does not exist", exec(wire.ExecRequest{Argv: []string{"/bin/true"}, Cwd: "/workspace/none-" + leakSecret}), "/workspace/none-[REDACTED"},
		{"env name", exec(wire.ExecRequest{Argv: []string{"/bin/true"}, Env: []string{"V_" + leakSecret + "=1"}}), "V_[REDACTED"},
		{"env value", exec(wire.ExecRequest{Argv: []string{"/bin/true"}, Env: []string{"PLAIN_VALUE=" + leakSecret}}), "PLAIN_VALUE"},
		{"terminal name", exec(wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "tty >/dev/null; echo $TERM"}, TTY: true, Rows: 24, Cols: 80, Env: []string{"TERM=" + leakSecret}}), "TERM"},
		{"written path", exec(wire.ExecRequest{Argv: []string{"/bin/sh", "-c", `echo x > "/workspace/src/w-$API_TOKEN"`}}), "/workspace/src/w-[REDACTED"},
		{"labels", func() {
			if code := d.do("POST", "/v1/sandboxes", map[string]any{"labels": map[string]string{"note": "l-" + leakSecret, "k" + leakSecret: "v"}}, &other); code != 201 {
				t.Fatalf("create with labels: %d", code)
			}
		}, "l-[REDACTED"},
	}
	for _, f := range fields {
		f.plant()
		otherID := other.ID
		if otherID == "" {
			otherID = sb
		}
		all := d.everyOutput(task.ID, sb, otherID)
		var shown bool
		for name, data := range all {
			if bytes.Contains(data, []byte(leakSecret)) {
				i := bytes.Index(data, []byte(leakSecret))
				t.Errorf("%s: the secret is in %s: ...%s...", f.name, name, data[max(0, i-80):min(len(data), i+len(leakSecret)+20)])
			}
			if bytes.Contains(data, []byte(f.shown)) {
				shown = true
			}
		}
		if !shown {
			t.Errorf("%s: no record shows %q: the field was not recorded at all", f.name, f.shown)
		}
	}
	// The task's results on the daemon's host: commands.jsonl, the
	// manifest, the bundle, the answer itself.
	var res tasks.FinishResult
	if code := d.do("POST", "/v1/tasks/"+task.ID+"/finish", nil, &res); code != 200 || len(res.Files) == 0 {
		t.Fatalf("finish: %d %+v", code, res)
	}
	b, _ := json.Marshal(res)
	results := map[string][]byte{"the finish answer": b}
	for _, f := range res.Files {
		results[f], _ = os.ReadFile(f)
	}
	for name, data := range results {
		if bytes.Contains(data, []byte(leakSecret)) {
			t.Errorf("after finish: the secret is in %s", name)
		}
	}
	if !bytes.Contains(results[filepath.Join(res.OutputDir, "commands.jsonl")], []byte("/workspace/src/[REDACTED")) {
		t.Errorf("commands.jsonl in the results lacks the redacted cwd")
	}
}

// remoteGet serves the API on loopback for a new API key and returns a GET
// as that client (status, body).
func (d *daemon) remoteGet(t *testing.T) func(path string) (int, []byte) {
	t.Helper()
	_, key, err := d.keys.Create(context.Background(), "agent", "")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(d.m, d.mods, Health{OK: true}).TCP()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return func(path string) (int, []byte) {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
}

// A command held for approval carries a credential in its line: the
// approver (the unix socket) sees it as it would run, an API key (the
// agent, or anyone holding one) sees it redacted, in the list and in the
// single approval (issue 17.8).
func TestHeldCredentialsShownOnlyToApprovers(t *testing.T) {
	d := newDaemonWith(t, func(c *stack.Config) { c.Redactor = redact.New() })
	sb := d.sandbox()
	// a known token shape, and a secret-named variable the redactor learns
	token := "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"
	script := fmt.Sprintf("curl -H 'Authorization: token %s' http://127.0.0.1:9/ && rm -rf /workspace/x-%s", token, leakSecret)
	code, _, e := d.exec(sb, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"DEPLOY_TOKEN=" + leakSecret}, ApprovalWaitSeconds: i64(0)})
	if code != 403 || e.ApprovalID == "" {
		t.Fatalf("the command was not held: %d %+v", code, e)
	}
	local := d.get("/v1/approvals?sandbox=" + sb)
	if !bytes.Contains(local, []byte(token)) || !bytes.Contains(local, []byte(leakSecret)) {
		t.Errorf("the approver must see the command as it would run: %s", local)
	}
	get := d.remoteGet(t)
	for _, p := range []string{"/v1/approvals?sandbox=" + sb, "/v1/approvals", "/v1/approvals/" + e.ApprovalID} {
		code, body := get(p)
		if code != 200 {
			t.Fatalf("GET %s over TCP: %d %s", p, code, body)
		}
		if bytes.Contains(body, []byte(token)) || bytes.Contains(body, []byte(leakSecret)) {
			t.Errorf("GET %s over TCP shows the held credentials raw: %s", p, body)
		}
		if !bytes.Contains(body, []byte("[REDACTED")) || !bytes.Contains(body, []byte(e.ApprovalID)) {
			t.Errorf("GET %s over TCP: the approval is not shown redacted: %s", p, body)
		}
	}
}
