package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/api"
	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/wire"
)

// twoProjects is the daemon's API over a real TCP listener, with
// projects red and blue and a key of each role in each.
type twoProjects struct {
	t    *testing.T
	url  string
	st   *store.Store
	keys map[string]map[tenant.Role]string
}

func newTwoProjects(t *testing.T) *twoProjects {
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
	mods := api.Modules{Keys: stk.Keys, Snapshots: stk.Snapshots, Secrets: stk.Secrets, Tasks: stk.Tasks, Files: stk.Files, Records: stk.Records,
		Policies: stk.Explain, Network: stk.Network, Approvals: stk.Approvals, Review: stk.Review, Audit: log, Owners: stk.Projects, Projects: stk.Projects}
	h := api.New(stk.Manager, mods, api.Health{OK: true, Version: "test", Backend: fakert.Name})
	srv := httptest.NewServer(h.TCP())
	t.Cleanup(func() {
		srv.Close()
		_ = stk.Manager.Shutdown(context.Background())
	})
	tp := &twoProjects{t: t, url: srv.URL, st: st, keys: map[string]map[tenant.Role]string{}}
	for _, p := range []string{"proj-red", "proj-blue"} {
		if _, err := stk.Projects.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		tp.keys[p] = map[tenant.Role]string{}
		for _, r := range tenant.Roles {
			_, key, err := stk.Keys.Make(context.Background(), apikeys.Request{Name: p + "-" + string(r), Project: p, Role: r})
			if err != nil {
				t.Fatal(err)
			}
			tp.keys[p][r] = key
		}
	}
	return tp
}

// session is an MCP session of key over TCP.
func (tp *twoProjects) session(key string) *mcpsdk.ClientSession {
	tp.t.Helper()
	hc := &http.Client{Transport: bearer{key, http.DefaultTransport}}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "tenancy-test", Version: "1"}, nil).
		Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: tp.url + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		tp.t.Fatal(err)
	}
	tp.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// rest calls the REST API with key; the status and body.
func (tp *twoProjects) rest(key, method, path string, body any) (int, []byte) {
	tp.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, tp.url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tp.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// redIDs are red's objects by the argument that names them, with the
// missing id of the same kind.
type redIDs struct{ red, none map[string]string }

func (tp *twoProjects) makeRed(cs *mcpsdk.ClientSession) redIDs {
	t := tp.t
	sb := callTool(t, cs, "create_sandbox", map[string]any{})
	id, _ := sb.st["sandbox_id"].(string)
	if id == "" || sb.IsError {
		t.Fatalf("red's create_sandbox: %s", sb.text)
	}
	if r := callTool(t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "/workspace/plan.txt", "content": "red's plan\n"}); r.IsError {
		t.Fatalf("write_file: %s", r.text)
	}
	ex := callTool(t, cs, "exec", map[string]any{"sandbox_id": id, "command": "echo red"})
	execID, _ := ex.st["exec_id"].(string)
	noWait := int64(0)
	_, b := tp.rest(tp.keys["proj-red"][tenant.Agent], "POST", "/v1/sandboxes/"+id+"/exec", wire.ExecRequest{Argv: []string{"rm", "-rf", "/workspace/x"}, ApprovalWaitSeconds: &noWait})
	var held wire.Error
	_ = json.Unmarshal(b, &held)
	now := time.Now().UTC()
	if err := tp.st.PutTask(context.Background(), &store.Task{ID: "t-red000000001", SandboxID: id, State: "running", Spec: json.RawMessage(`{}`), Created: now}); err != nil {
		t.Fatal(err)
	}
	if execID == "" || held.ApprovalID == "" {
		t.Fatalf("red's exec %q (%s), approval %q (%s)", execID, ex.text, held.ApprovalID, b)
	}
	return redIDs{
		red:  map[string]string{"sandbox": id, "exec": execID, "approval": held.ApprovalID, "task": "t-red000000001"},
		none: map[string]string{"sandbox": "sb-000000000000", "exec": "x-000000000000", "approval": "ap-000000000000", "task": "t-000000000000"},
	}
}

func callTool(t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) result {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resultOf(r)
}

// idKinds are the tool arguments that name an object, by kind; "id" is
// the list tools' (list_sandboxes: a sandbox, list_tasks: a task).
var idKinds = map[string]string{"sandbox_id": "sandbox", "exec_id": "exec", "approval_id": "approval", "task_id": "task"}

// toolArgs fills a tool's arguments from its input schema: its ids from
// ids, the other required ones with plain values. ok false: it names no
// object.
func toolArgs(t *testing.T, tl *mcpsdk.Tool, ids map[string]string) (map[string]any, bool) {
	t.Helper()
	b, _ := json.Marshal(tl.InputSchema)
	var sch struct {
		Properties map[string]struct{ Type string }
		Required   []string
	}
	if err := json.Unmarshal(b, &sch); err != nil {
		t.Fatal(err)
	}
	args, named := map[string]any{}, false
	for p := range sch.Properties {
		kind := idKinds[p]
		if p == "id" {
			kind = map[string]string{"list_sandboxes": "sandbox", "list_tasks": "task"}[tl.Name]
			if kind == "" {
				t.Errorf("tool %s: argument id names a kind this test does not know", tl.Name)
			}
		}
		if kind != "" {
			args[p], named = ids[kind], true
		}
	}
	for _, p := range sch.Required {
		if _, set := args[p]; set {
			continue
		}
		switch sch.Properties[p].Type {
		case "string":
			args[p] = map[string]string{"path": "/workspace/plan.txt", "command": "cat /workspace/plan.txt", "name": "blue-snap"}[p]
			if args[p] == "" {
				args[p] = "x"
			}
		case "integer", "number":
			args[p] = 1
		case "boolean":
			args[p] = false
		}
	}
	return args, named
}

// Attack: MCP sessions of keys of every role of project blue, over TCP,
// call every tool the server lists that names an object (and read every
// resource template) with red's ids: each answer is the answer for ids
// that do not exist, and the list tools name nothing of red's. Red's
// files are unchanged and red's own session still reads them.
func TestMCPToolsSeeOnlyTheKeysProject(t *testing.T) {
	tp := newTwoProjects(t)
	redCS := tp.session(tp.keys["proj-red"][tenant.Agent])
	ids := tp.makeRed(redCS)
	for _, role := range tenant.Roles {
		cs := tp.session(tp.keys["proj-blue"][role])
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) < 20 {
			t.Fatalf("tools/list: %d %v", len(tools.Tools), err)
		}
		covered := 0
		for _, tl := range tools.Tools {
			a1, named := toolArgs(t, tl, ids.red)
			if named {
				covered++
			}
			if !named {
				if !strings.HasPrefix(tl.Name, "list_") {
					continue // makes its own objects (create_sandbox, start_task)
				}
				r := callTool(t, cs, tl.Name, a1)
				for k, id := range ids.red {
					if strings.Contains(r.text, id) {
						t.Errorf("%s as blue's %s shows red's %s %s: %s", tl.Name, role, k, id, r.text)
					}
				}
				continue
			}
			a2, _ := toolArgs(t, tl, ids.none)
			r1, r2 := callTool(t, cs, tl.Name, a1), callTool(t, cs, tl.Name, a2)
			text := r1.text
			for k, id := range ids.red {
				text = strings.ReplaceAll(text, id, ids.none[k])
			}
			if !r1.IsError || text != r2.text {
				t.Errorf("%s as blue's %s: red's ids answer (error %v) %q; missing ids %q", tl.Name, role, r1.IsError, text, r2.text)
			}
		}
		if covered < 18 {
			t.Errorf("as blue's %s: only %d tools name an object", role, covered)
		}
		tpls, err := cs.ListResourceTemplates(context.Background(), nil)
		if err != nil || len(tpls.ResourceTemplates) == 0 {
			t.Fatalf("resources/templates/list: %v", err)
		}
		for _, rt := range tpls.ResourceTemplates {
			fill := func(m map[string]string) string {
				u := strings.NewReplacer("{sandbox}", m["sandbox"], "{task}", m["task"], "{+path}", "workspace/plan.txt").Replace(rt.URITemplate)
				if strings.Contains(u, "{") {
					t.Errorf("resource template %s: a value this test cannot fill", rt.URITemplate)
				}
				return u
			}
			_, e1 := cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: fill(ids.red)})
			_, e2 := cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: fill(ids.none)})
			m1 := fmt.Sprint(e1)
			for k, id := range ids.red {
				m1 = strings.ReplaceAll(m1, id, ids.none[k])
			}
			if e1 == nil || m1 != fmt.Sprint(e2) {
				t.Errorf("resource %s as blue's %s: red's answers %q; a missing one's %v", rt.URITemplate, role, m1, e2)
			}
		}
	}
	if r := callTool(t, redCS, "read_file", map[string]any{"sandbox_id": ids.red["sandbox"], "path": "/workspace/plan.txt"}); r.IsError || !strings.Contains(r.text, "red's plan") {
		t.Errorf("red reads its plan after blue's calls: %s", r.text)
	}
	if r := callTool(t, redCS, "list_sandboxes", map[string]any{}); !strings.Contains(r.text, ids.red["sandbox"]) {
		t.Errorf("red's list_sandboxes: %s", r.text)
	}
}
