package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/wire"
)

// secretDaemon is a daemon that keeps secrets (key in a temp dir), with
// an audit log, a redactor and a movable clock.
func secretDaemon(t *testing.T) (*daemon, *clock, string) {
	t.Helper()
	clk := &clock{}
	keyFile := filepath.Join(t.TempDir(), "secrets.key")
	d := newDaemonWith(t, func(c *stack.Config) {
		red := redact.New()
		log, err := audit.Open(context.Background(), audit.Config{Store: c.Store, Redactor: red, KeyFile: filepath.Join(t.TempDir(), "audit.key")})
		if err != nil {
			t.Fatal(err)
		}
		c.Policy, c.Audit, c.Redactor, c.Now = allowAll, log, red, clk.Now
		c.SecretsKey = keyFile
	})
	return d, clk, keyFile
}

const secretValue = "s3cr3t-value-9f8e7d6c5b4a"

func TestSecrets(t *testing.T) {
	d, clk, keyFile := secretDaemon(t)
	if code := d.do("PUT", "/v1/secrets/DEPLOY_TOKEN", map[string]string{"value": secretValue}, nil); code != 200 {
		t.Fatalf("set: %d", code)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	// Stored sealed: the value is nowhere in the database's files.
	for _, suffix := range []string{"", "-wal"} {
		b, _ := os.ReadFile(d.dbPath + suffix)
		if bytes.Contains(b, []byte(secretValue)) {
			t.Fatalf("the value is in the database file%s in the clear", suffix)
		}
	}
	var list struct{ Secrets []secrets.Info }
	d.do("GET", "/v1/secrets", nil, &list)
	if len(list.Secrets) != 1 || list.Secrets[0].Name != "DEPLOY_TOKEN" {
		t.Fatalf("list: %+v", list)
	}
	var a, b sandbox.Sandbox
	d.do("POST", "/v1/sandboxes", "", &a)
	d.do("POST", "/v1/sandboxes", "", &b)
	// Before a grant, no command of the sandbox has it.
	if _, out, _ := d.sh(a.ID, `echo "[$DEPLOY_TOKEN]"`, nil); out != "[]\n" {
		t.Fatalf("before the grant: %q", out)
	}
	var g secrets.Grant
	if code := d.do("POST", "/v1/secrets/DEPLOY_TOKEN/grants", map[string]any{"sandbox_id": a.ID, "hosts": []string{"deploy.example.test"}, "ttl_seconds": 600}, &g); code != 201 {
		t.Fatalf("grant: %d", code)
	}
	if g.Mode != "env" || g.Env != "DEPLOY_TOKEN" || g.State != "active" || g.Placeholder != "" {
		t.Fatalf("grant: %+v", g)
	}
	// The granted sandbox's commands get it (and can print it: the
	// stored output and the audit record are redacted).
	code, out, _ := d.sh(a.ID, `test "$DEPLOY_TOKEN" = '`+secretValue+`' && echo granted; echo "$DEPLOY_TOKEN"`, nil)
	if code != 200 || !strings.HasPrefix(out, "granted\n") {
		t.Fatalf("granted sandbox: %d %q", code, out)
	}
	// The other sandbox does not.
	if _, out, _ := d.sh(b.ID, `echo "[$DEPLOY_TOKEN]"; cat /proc/1/environ 2>/dev/null | tr '\0' '\n' | grep -c DEPLOY || true`, nil); !strings.HasPrefix(out, "[]\n") {
		t.Fatalf("other sandbox: %q", out)
	}
	var execs struct{ Execs []sandbox.Exec }
	d.do("GET", "/v1/sandboxes/"+a.ID+"/execs", nil, &execs)
	last := execs.Execs[len(execs.Execs)-1]
	resp, err := d.client.Get("http://airlock/v1/sandboxes/" + a.ID + "/execs/" + last.ID + "/output?stream=stdout")
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	stored := string(sb)
	if strings.Contains(stored, secretValue) || !strings.Contains(stored, "granted") {
		t.Fatalf("stored output is not redacted: %q", stored)
	}
	raw, _ := json.Marshal(d.events("sandbox=" + a.ID))
	if bytes.Contains(raw, []byte(secretValue)) {
		t.Fatal("the value is in the audit record")
	}
	if !bytes.Contains(raw, []byte(`"secret.grant"`)) || !bytes.Contains(raw, []byte(`"secrets":[{"env":"DEPLOY_TOKEN","grant":"`+g.ID)) {
		t.Fatalf("the grant and its use are not in the record: %s", raw)
	}
	// The grant expires.
	clk.advance(11 * time.Minute)
	if _, out, _ := d.sh(a.ID, `echo "[$DEPLOY_TOKEN]"`, nil); out != "[]\n" {
		t.Fatalf("after expiry: %q", out)
	}
	var grants struct{ Grants []secrets.Grant }
	d.do("GET", "/v1/secret-grants?sandbox="+a.ID, nil, &grants)
	if len(grants.Grants) != 1 || grants.Grants[0].State != "expired" {
		t.Fatalf("grants after expiry: %+v", grants)
	}
	// Revoking ends a grant at once; deleting the secret ends its grants.
	d.do("POST", "/v1/secrets/DEPLOY_TOKEN/grants", map[string]any{"sandbox_id": a.ID, "env": "TOKEN2", "hosts": []string{"*.example.test"}}, &g)
	if _, out, _ := d.sh(a.ID, `echo "[${TOKEN2:+set}]"`, nil); out != "[set]\n" {
		t.Fatalf("second grant: %q", out)
	}
	if code := d.do("DELETE", "/v1/secret-grants/"+g.ID, nil, nil); code != 204 {
		t.Fatalf("revoke: %d", code)
	}
	if code := d.do("DELETE", "/v1/secret-grants/"+g.ID, nil, nil); code != 409 {
		t.Fatalf("second revoke: %d", code)
	}
	if _, out, _ := d.sh(a.ID, `echo "[${TOKEN2:+set}]"`, nil); out != "[]\n" {
		t.Fatalf("after revoke: %q", out)
	}
	d.do("POST", "/v1/secrets/DEPLOY_TOKEN/grants", map[string]any{"sandbox_id": a.ID, "env": "TOKEN3", "hosts": []string{"x.example.test"}}, &g)
	if code := d.do("DELETE", "/v1/secrets/DEPLOY_TOKEN", nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	if _, out, _ := d.sh(a.ID, `echo "[${TOKEN3:+set}]"`, nil); out != "[]\n" {
		t.Fatalf("after delete: %q", out)
	}
}

func TestSecretBadInput(t *testing.T) {
	d, _, _ := secretDaemon(t)
	d.do("PUT", "/v1/secrets/OK", map[string]string{"value": "v"}, nil)
	var sb sandbox.Sandbox
	d.do("POST", "/v1/sandboxes", "", &sb)
	for _, c := range []struct {
		method, path string
		body         any
		code         int
		msg          string
	}{
		{"PUT", "/v1/secrets/1BAD", map[string]string{"value": "v"}, 400, "secret name"},
		{"PUT", "/v1/secrets/OK2", map[string]string{"value": ""}, 400, "1 to"},
		{"PUT", "/v1/secrets/OK2", map[string]string{"value": "a\x00b"}, 400, "NUL"},
		{"PUT", "/v1/secrets/OK2", map[string]string{"value": strings.Repeat("x", secrets.MaxValueBytes+1)}, 400, "1 to"},
		{"POST", "/v1/secrets/NOPE/grants", map[string]any{"sandbox_id": sb.ID, "hosts": []string{"a.test"}}, 404, ""},
		{"POST", "/v1/secrets/OK/grants", map[string]any{"hosts": []string{"a.test"}}, 400, "exactly one"},
		{"POST", "/v1/secrets/OK/grants", map[string]any{"sandbox_id": sb.ID}, 400, "hosts"},
		{"POST", "/v1/secrets/OK/grants", map[string]any{"sandbox_id": sb.ID, "hosts": []string{"a b"}}, 400, "host"},
		{"POST", "/v1/secrets/OK/grants", map[string]any{"sandbox_id": sb.ID, "hosts": []string{"a.test"}, "mode": "file"}, 400, "mode"},
		{"POST", "/v1/secrets/OK/grants", map[string]any{"sandbox_id": sb.ID, "hosts": []string{"a.test"}, "env": "A=B"}, 400, "env"},
		{"POST", "/v1/secrets/OK/grants", map[string]any{"sandbox_id": sb.ID, "hosts": []string{"a.test"}, "ttl_seconds": 90000}, 400, "at most"},
		{"POST", "/v1/secrets/OK/grants", map[string]any{"sandbox_id": "nosuch", "hosts": []string{"a.test"}}, 404, ""},
		// No broker in this daemon: a brokered grant is refused, not handed
		// a placeholder that nothing would ever replace.
		{"POST", "/v1/secrets/OK/grants", map[string]any{"sandbox_id": sb.ID, "hosts": []string{"a.test"}, "mode": "broker"}, 501, "broker"},
	} {
		var e wire.Error
		if code := d.do(c.method, c.path, c.body, &e); code != c.code || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s %s %v: %d %+v, want %d %q", c.method, c.path, c.body, code, e, c.code, c.msg)
		}
	}
}

// Secrets are the operator's: an agent's API key cannot list, set or
// grant them.
func TestSecretsRefusedOverTCP(t *testing.T) {
	d, _, _ := secretDaemon(t)
	_, key, _ := d.keys.Create(context.Background(), "agent", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(d.m, d.mods, Health{OK: true}).TCP()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	for _, c := range [][2]string{{"GET", "/v1/secrets"}, {"PUT", "/v1/secrets/X"}, {"POST", "/v1/secrets/X/grants"}, {"GET", "/v1/secret-grants"}, {"DELETE", "/v1/secret-grants/sg-1"}} {
		req, _ := http.NewRequest(c[0], "http://"+ln.Addr().String()+c[1], strings.NewReader(`{"value":"v"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("%s %s over TCP: %d", c[0], c[1], resp.StatusCode)
		}
	}
}

// A daemon started with another key cannot open the secrets, and says so.
func TestSecretWrongKey(t *testing.T) {
	d, _, keyFile := secretDaemon(t)
	d.do("PUT", "/v1/secrets/K", map[string]string{"value": secretValue}, nil)
	other := filepath.Join(t.TempDir(), "other.key")
	_ = os.WriteFile(other, bytes.Repeat([]byte{7}, 32), 0o600)
	tpls, err := template.Open(filepath.Join(t.TempDir(), "templates"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = manager.New(context.Background(), manager.Config{Backend: d.be, Templates: tpls, Store: d.st, Modules: []hook.Module{secrets.New(other)}})
	if err == nil || !strings.Contains(err.Error(), "cannot be opened with this daemon's secret key") {
		t.Fatalf("another key: %v", err)
	}
	// A key file of the wrong size is refused rather than used.
	_ = os.WriteFile(other, []byte("short"), 0o600)
	if _, err = manager.New(context.Background(), manager.Config{Backend: d.be, Templates: tpls, Store: d.st, Modules: []hook.Module{secrets.New(other)}}); err == nil || !strings.Contains(err.Error(), "want 32") {
		t.Fatalf("short key: %v", err)
	}
	if _, err = manager.New(context.Background(), manager.Config{Backend: d.be, Templates: tpls, Store: d.st, Modules: []hook.Module{secrets.New(keyFile)}}); err != nil {
		t.Fatalf("the right key: %v", err)
	}
}

// A grant to a task ends when the task finishes, also when its sandbox is
// kept.
func TestSecretTaskGrantEndsWithTheTask(t *testing.T) {
	d, _, _ := secretDaemon(t)
	repo, _ := sampleRepo(t)
	if code := d.do("PUT", "/v1/secrets/DEPLOY_TOKEN", map[string]string{"value": secretValue}, nil); code != 200 {
		t.Fatalf("set: %d", code)
	}
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo}, &task); code != 201 {
		t.Fatal(code)
	}
	var e wire.Error
	if code := d.do("POST", "/v1/secrets/DEPLOY_TOKEN/grants", map[string]any{"task_id": task.ID, "hosts": []string{"deploy.example.test"}}, &e); code != 201 {
		t.Fatalf("grant: %d %+v", code, e)
	}
	if _, out, _ := d.sh(task.SandboxID, `echo "[${DEPLOY_TOKEN:+set}]"`, nil); out != "[set]\n" {
		t.Fatalf("during the task: %q", out)
	}
	if code := d.do("POST", "/v1/tasks/"+task.ID+"/finish?keep=true", nil, nil); code != 200 {
		t.Fatalf("finish --keep: %d", code)
	}
	if _, out, _ := d.sh(task.SandboxID, `echo "[${DEPLOY_TOKEN:+set}]"`, nil); out != "[]\n" {
		t.Errorf("in the kept sandbox after the task: %q", out)
	}
	var grants struct{ Grants []secrets.Grant }
	d.do("GET", "/v1/secret-grants?sandbox="+task.SandboxID, nil, &grants)
	if len(grants.Grants) != 1 || grants.Grants[0].State != "revoked" {
		t.Errorf("grants after the task: %+v", grants.Grants)
	}
	raw, _ := json.Marshal(d.events("sandbox=" + task.SandboxID))
	if !bytes.Contains(raw, []byte(`"reason":"task finished"`)) {
		t.Errorf("no record of the grant's end: %s", raw)
	}
}
