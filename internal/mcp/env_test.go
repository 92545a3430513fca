package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/api"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/mcp"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/sdk"
)

// These tests drive the MCP server in process: the Go SDK's client over
// an in-memory transport, the server's tools calling the real API handler
// (over its TCP door, with an API key, as an agent's client would) on the
// manager and its modules on the fake backend. cmd/airlock's MCP tests
// are the end-to-end tier (a daemon, stdio and streamable HTTP clients).

// templateDir is the template store every test's daemon shares: the
// first sandbox of a new store prepares its template (a third of a
// second), once per package rather than once per test.
var templateDir string

func TestMain(m *testing.M) {
	// Progress and approval polls every 20 ms, not every second.
	undo := mcp.SetPollEvery(20 * time.Millisecond)
	dir, err := os.MkdirTemp("", "airlock-mcp-test-")
	if err != nil {
		panic(err)
	}
	templateDir = filepath.Join(dir, "templates")
	code := m.Run()
	undo()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testPolicy lets commands run, holds destructive ones for a human and
// denies curl with a reason.
const testPolicy = "classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: ask, secret: allow, unknown: allow, persist: allow}\n" +
	"outside_scope: allow\nrules: [{id: no-curl, command: 'curl *', action: deny, reason: 'no downloads here'}]\n"

type env struct {
	t       *testing.T
	handler *api.Server
	op      *sdk.Client // the operator, on the socket's side: approves and denies
	agent   *sdk.Client // the MCP server's client: an API key over the TCP door
	key     string
	srv     *mcp.Server
	cs      *mcpsdk.ClientSession
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tpls, err := template.Open(templateDir)
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	stk, err := stack.New(context.Background(), stack.Config{Config: manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log,
		Redactor: red, Policy: pol, Logf: t.Logf},
		TaskDir: filepath.Join(dir, "tasks"), SnapshotDir: filepath.Join(dir, "snapshots"), SecretsKey: filepath.Join(dir, "secrets.key")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stk.Manager.Shutdown(context.Background()) })
	mods := api.Modules{Keys: stk.Keys, Snapshots: stk.Snapshots, Secrets: stk.Secrets, Tasks: stk.Tasks, Files: stk.Files, Records: stk.Records,
		Policies: stk.Explain, Network: stk.Network, Approvals: stk.Approvals, Review: stk.Review, Audit: log, Owners: stk.Projects, Projects: stk.Projects}
	h := api.New(stk.Manager, mods, api.Health{OK: true, Version: "test", Backend: fakert.Name})
	_, key, err := stk.Keys.Create(context.Background(), "mcp-test", "")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, handler: h, key: key}
	e.op = client(t, h)
	e.agent = client(t, h.TCP(), sdk.WithAPIKey(key))
	e.srv = &mcp.Server{Client: e.agent, Version: "test"}
	e.cs = e.connectWith(nil)
	return e
}

// client is an airlock client whose requests h serves in process.
func client(t *testing.T, h http.Handler, opts ...sdk.Option) *sdk.Client {
	t.Helper()
	c, err := sdk.New(append([]sdk.Option{sdk.WithBaseURL("http://airlock"), sdk.WithHTTPClient(&http.Client{Transport: mcp.InProcess{Handler: h}})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// result is one tool call's answer: its text and structured content.
type result struct {
	*mcpsdk.CallToolResult
	text string
	st   map[string]any
}

// call calls a tool; a protocol error fails the test (a tool error is
// a result).
func (e *env) call(name string, args any) result {
	e.t.Helper()
	r, err := e.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	return resultOf(r)
}

func resultOf(r *mcpsdk.CallToolResult) result {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	res := result{CallToolResult: r, text: b.String()}
	if r.StructuredContent != nil {
		j, _ := json.Marshal(r.StructuredContent)
		_ = json.Unmarshal(j, &res.st)
	}
	return res
}

// ok calls a tool that must succeed.
func (e *env) ok(name string, args any) result {
	e.t.Helper()
	r := e.call(name, args)
	if r.IsError {
		e.t.Fatalf("%s %v: tool error %s", name, args, r.text)
	}
	return r
}

// fails calls a tool that must answer a tool error containing want.
func (e *env) fails(name string, args any, want string) result {
	e.t.Helper()
	if want == "" {
		e.t.Fatal("fails: name the error expected")
	}
	r := e.call(name, args)
	if !r.IsError || !strings.Contains(r.text, want) {
		e.t.Errorf("%s %v: want a tool error with %q, got (error %v) %q", name, args, want, r.IsError, r.text)
	}
	return r
}

func (e *env) sandbox() string {
	e.t.Helper()
	id, _ := e.ok("create_sandbox", map[string]any{}).st["sandbox_id"].(string)
	if id == "" {
		e.t.Fatal("create_sandbox: no sandbox_id")
	}
	return id
}

// gitRepo makes a repository with one commit, for a task.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// num is a structured field as an int (JSON numbers are float64).
func num(t *testing.T, m map[string]any, k string) int {
	t.Helper()
	f, ok := m[k].(float64)
	if !ok {
		t.Fatalf("%s is %T %v in %v", k, m[k], m[k], m)
	}
	return int(f)
}
