package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/wire"
)

// tenants is the API over TCP on the fake backend, with two projects
// (red and blue) and a key of each role in each, and the operator's
// handler (the socket's).
type tenants struct {
	t    *testing.T
	srv  *Server
	tcp  *httptest.Server
	keys map[string]map[tenant.Role]string // project -> role -> key
	st   *store.Store
	stk  *stack.Stack
}

func newTenants(t *testing.T) *tenants {
	t.Helper()
	return newTenantsWith(t, defaultTenantsPolicy)
}

// defaultTenantsPolicy is newTenants' policy: everything allowed but a
// push, which is held.
const defaultTenantsPolicy = "classes: {read: allow, build: allow, write: allow, unknown: allow}\nrules: [{id: hold-push, command: 'git push *', action: ask}]\n"

func newTenantsWith(t *testing.T, policyFile string) *tenants {
	t.Helper()
	return newTenantsQuotas(t, policyFile, quotas.Config{})
}

// newTenantsQuotas is newTenantsWith with the quotas module's settings qc.
func newTenantsQuotas(t *testing.T, policyFile string, qc quotas.Config, mcfg ...func(*manager.Config)) *tenants {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(policyFile))
	if err != nil {
		t.Fatal(err)
	}
	mc := manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log, Redactor: red, Policy: pol, Logf: t.Logf}
	for _, f := range mcfg {
		f(&mc)
	}
	stk, err := stack.New(context.Background(), stack.Config{Config: mc,
		TaskDir: filepath.Join(dir, "tasks"), SnapshotDir: filepath.Join(dir, "snapshots"), SecretsKey: filepath.Join(dir, "secrets.key"), Quotas: qc})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(stk.Manager, modulesOf(stk, log), Health{OK: true, Version: "test", Backend: fakert.Name})
	tcp := httptest.NewServer(srv.TCP())
	t.Cleanup(func() {
		tcp.Close()
		_ = stk.Manager.Shutdown(context.Background())
	})
	tn := &tenants{t: t, srv: srv, tcp: tcp, st: st, stk: stk, keys: map[string]map[tenant.Role]string{}}
	ctx := context.Background()
	for _, p := range []string{"proj-red", "proj-blue"} {
		if _, err := stk.Projects.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		tn.keys[p] = map[tenant.Role]string{}
		for _, r := range tenant.Roles {
			_, key, err := stk.Keys.Make(ctx, apikeys.Request{Name: p + "-" + string(r), Project: p, Role: r})
			if err != nil {
				t.Fatal(err)
			}
			tn.keys[p][r] = key
		}
	}
	return tn
}

// call sends a request with key over TCP ("" key: as the operator, on
// the socket's handler) and returns the status and body.
func (tn *tenants) call(key, method, path string, body any) (int, []byte) {
	tn.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	if key == "" {
		req := httptest.NewRequest(method, path, rd)
		rec := httptest.NewRecorder()
		tn.srv.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	req, _ := http.NewRequest(method, tn.tcp.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := tn.tcp.Client().Do(req)
	if err != nil {
		tn.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (tn *tenants) must(key, method, path string, body any, want int, out any) {
	tn.t.Helper()
	code, b := tn.call(key, method, path, body)
	if code != want {
		tn.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tn.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// redObjects are red's objects, one of each kind a route may name.
type redObjects struct {
	ids  map[tenant.Kind]string
	exec string
	// secret and blob are what the routes' {name} and {hash} name of
	// red's: a secret's name and an audit blob's hash.
	secret, blob string
	all          []string // every id, for the lists' check
}

func (tn *tenants) makeRed() redObjects {
	t := tn.t
	agent := tn.keys["proj-red"][tenant.Agent]
	var sb wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	if sb.Project != "proj-red" {
		t.Fatalf("red's agent made a sandbox of project %q", sb.Project)
	}
	code, b := tn.call(agent, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"true"}})
	if code != 200 {
		t.Fatalf("exec: %d %s", code, b)
	}
	var execs wire.ExecList
	tn.must(agent, "GET", "/v1/sandboxes/"+sb.ID+"/execs", nil, 200, &execs)
	var snap wire.Snapshot
	tn.must(agent, "POST", "/v1/sandboxes/"+sb.ID+"/snapshot", wire.SnapshotRequest{Name: "red-snap"}, 201, &snap)
	if snap.Project != "proj-red" {
		t.Fatalf("red's snapshot is of project %q", snap.Project)
	}
	noWait := int64(0)
	var held wire.Error
	tn.must(agent, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"git", "push", "origin", "main"}, ApprovalWaitSeconds: &noWait}, 403, &held)
	var keys wire.APIKeyList
	tn.must(tn.keys["proj-red"][tenant.Admin], "GET", "/v1/apikeys", nil, 200, &keys)
	if len(execs.Execs) == 0 || held.ApprovalID == "" || len(keys.APIKeys) != len(tenant.Roles) {
		t.Fatalf("red's objects: %d execs, approval %q, %d keys", len(execs.Execs), held.ApprovalID, len(keys.APIKeys))
	}
	o := redObjects{ids: map[tenant.Kind]string{
		tenant.Sandbox: sb.ID, tenant.Approval: held.ApprovalID, tenant.APIKey: keys.APIKeys[0].ID, tenant.Project: "proj-red",
	}, exec: execs.Execs[0].ID}
	o.ids[tenant.Task], o.ids[tenant.Grant] = tn.redRecords(sb.ID)
	o.secret, o.blob = "RED_TOKEN", tn.redBlob(sb.ID)
	o.all = []string{sb.ID, held.ApprovalID, o.exec, "proj-red", o.ids[tenant.Task], o.ids[tenant.Grant], o.secret, o.blob, "red-snap"}
	for _, k := range keys.APIKeys {
		o.all = append(o.all, k.ID)
	}
	return o
}

// missing is an id of kind that names nothing, shaped like a real one.
var missing = map[tenant.Kind]string{
	tenant.Sandbox: "sb-000000000000", tenant.Task: "t-000000000000", tenant.Approval: "ap-000000000000",
	tenant.APIKey: "k-000000000000", tenant.Grant: "g-000000000000", tenant.Project: "proj-none",
}

// missingSecret and missingBlob name no secret and no blob.
var (
	missingSecret = "NO_SUCH_TOKEN"
	missingBlob   = strings.Repeat("0", 64)
)

// fillRoute makes a route's path with ids (its other values fixed).
func fillRoute(pattern string, kindParam string, id, exec string) (method, path string) {
	return fillNamed(pattern, kindParam, id, exec, "TOKEN", missingBlob)
}

// fillNamed is fillRoute with the secret name and blob hash given.
func fillNamed(pattern, kindParam, id, exec, name, hash string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	if kindParam != "" {
		path = strings.ReplaceAll(path, "{"+kindParam+"}", id)
	}
	path = strings.ReplaceAll(path, "{exec}", exec)
	path = strings.ReplaceAll(path, "{hash}", hash)
	path = strings.ReplaceAll(path, "{name}", name)
	return method, path
}

// Attack: a key of every role of project blue sends every route with
// red's ids. Each answer must be the answer for an id that does not
// exist, byte for byte, and nothing of red's may change. A route added
// with a path value the test cannot fill fails it, so no new route goes
// uncovered.
func TestEveryRouteHidesAnotherProjectsObjects(t *testing.T) {
	tn := newTenants(t)
	red := tn.makeRed()
	before := tn.redState(red)
	known := map[string]bool{"exec": true, "hash": true, "name": true}
	for _, r := range tn.srv.Routes() {
		for _, p := range pathValues(r.Pattern) {
			if p != r.Param && !known[p] {
				t.Errorf("%s: path value {%s} is neither its owner's nor one this test fills: declare its kind", r.Pattern, p)
			}
		}
		if strings.Contains(r.Pattern, "{id}") && r.Kind == "" {
			t.Errorf("%s names an object but no kind: the guard cannot check its project", r.Pattern)
		}
		if r.Kind == "" {
			tn.triesNamed(r, red)
			continue
		}
		redID := red.ids[r.Kind]
		if redID == "" {
			t.Fatalf("%s: no red object of kind %s to try", r.Pattern, r.Kind)
		}
		for _, role := range tenant.Roles {
			key := tn.keys["proj-blue"][role]
			m, foreign := fillRoute(r.Pattern, r.Param, redID, red.exec)
			_, none := fillRoute(r.Pattern, r.Param, missing[r.Kind], red.exec)
			c1, b1 := tn.call(key, m, foreign, struct{}{})
			c2, b2 := tn.call(key, m, none, struct{}{})
			b1 = bytes.ReplaceAll(b1, []byte(redID), []byte(missing[r.Kind]))
			if c1 != c2 || !bytes.Equal(b1, b2) {
				t.Errorf("%s as blue's %s: red's id answers %d %s; a missing one %d %s", r.Pattern, role, c1, b1, c2, b2)
			}
			if c1 != http.StatusNotFound && c1 != http.StatusForbidden {
				t.Errorf("%s as blue's %s: red's id answers %d %s", r.Pattern, role, c1, b1)
			}
		}
	}
	if after := tn.redState(red); after != before {
		t.Errorf("blue's requests changed red's objects:\nbefore %s\nafter  %s", before, after)
	}
}

// redRecords makes red's task as a record (a task over TCP needs a
// repository the fake backend cannot check out: the guard reads only
// who owns it), and red's secret and its grant to the sandbox through
// red's admin.
func (tn *tenants) redRecords(sandboxID string) (taskID, grantID string) {
	tn.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if err := tn.st.PutTask(ctx, &store.Task{ID: "t-red000000001", SandboxID: sandboxID, State: "running", Spec: json.RawMessage(`{}`), Created: now}); err != nil {
		tn.t.Fatal(err)
	}
	admin := tn.keys["proj-red"][tenant.Admin]
	var info wire.SecretInfo
	tn.must(admin, "PUT", "/v1/secrets/RED_TOKEN", wire.SecretValue{Value: "red-token-value-0123456789"}, 200, &info)
	var g wire.SecretGrant
	tn.must(admin, "POST", "/v1/secrets/RED_TOKEN/grants", wire.SecretGrantRequest{SandboxID: sandboxID, Hosts: []string{"a.test"}}, 201, &g)
	if info.Project != "proj-red" || g.Project != "proj-red" {
		tn.t.Fatalf("red's secret %+v, grant %+v", info, g)
	}
	return "t-red000000001", g.ID
}

// redBlob runs a command of red's whose output is stored as an audit
// blob, and returns the blob's hash.
func (tn *tenants) redBlob(sandboxID string) string {
	tn.t.Helper()
	agent := tn.keys["proj-red"][tenant.Agent]
	if code, b := tn.call(agent, "POST", "/v1/sandboxes/"+sandboxID+"/exec", wire.ExecRequest{Argv: []string{"sh", "-c", "yes red | head -c 6000"}}); code != 200 {
		tn.t.Fatalf("red's long output: %d %s", code, b)
	}
	var l wire.AuditEventList
	tn.must(tn.keys["proj-red"][tenant.Reviewer], "GET", "/v1/audit?sandbox="+sandboxID+"&kind=exec.end", nil, 200, &l)
	for _, e := range l.Events {
		var p struct {
			Stdout struct {
				Blob string `json:"blob"`
			} `json:"stdout"`
		}
		if json.Unmarshal(e.Payload, &p) == nil && strings.HasPrefix(p.Stdout.Blob, "blob:sha256:") {
			return strings.TrimPrefix(p.Stdout.Blob, "blob:sha256:")
		}
	}
	tn.t.Fatalf("red's exec.end events hold no blob: %+v", l.Events)
	return ""
}

// triesNamed sends a route whose path names a secret or a blob (looked
// up in the caller's project, not by the guard) with red's, as every
// blue role: the answer must be the one for a name that does not exist.
func (tn *tenants) triesNamed(r Route, red redObjects) {
	if !strings.Contains(r.Pattern, "{name}") && !strings.Contains(r.Pattern, "{hash}") {
		return
	}
	for _, role := range tenant.Roles {
		key := tn.keys["proj-blue"][role]
		m, foreign := fillNamed(r.Pattern, "", "", red.exec, red.secret, red.blob)
		_, none := fillNamed(r.Pattern, "", "", red.exec, missingSecret, missingBlob)
		c1, b1 := tn.call(key, m, foreign, struct{}{})
		c2, b2 := tn.call(key, m, none, struct{}{})
		b1 = bytes.ReplaceAll(bytes.ReplaceAll(b1, []byte(red.secret), []byte(missingSecret)), []byte(red.blob), []byte(missingBlob))
		if c1 != c2 || !bytes.Equal(b1, b2) {
			tn.t.Errorf("%s as blue's %s: red's name answers %d %s; a missing one %d %s", r.Pattern, role, c1, b1, c2, b2)
		}
	}
}

// redState is what blue must not change of red's, as one string.
func (tn *tenants) redState(red redObjects) string {
	var sb wire.Sandbox
	tn.must("", "GET", "/v1/sandboxes/"+red.ids[tenant.Sandbox], nil, 200, &sb)
	var execs wire.ExecList
	tn.must("", "GET", "/v1/sandboxes/"+red.ids[tenant.Sandbox]+"/execs", nil, 200, &execs)
	var ap wire.Approval
	tn.must("", "GET", "/v1/approvals/"+red.ids[tenant.Approval], nil, 200, &ap)
	var keys wire.APIKeyList
	tn.must("", "GET", "/v1/apikeys", nil, 200, &keys)
	var ps wire.ProjectList
	tn.must("", "GET", "/v1/projects", nil, 200, &ps)
	var secs wire.SecretList
	tn.must("", "GET", "/v1/secrets?project=proj-red", nil, 200, &secs)
	var grants wire.SecretGrantList
	tn.must("", "GET", "/v1/secret-grants?sandbox="+red.ids[tenant.Sandbox], nil, 200, &grants)
	var gs []string
	for _, g := range grants.Grants {
		gs = append(gs, g.ID+" "+g.State)
	}
	blob, _ := tn.call("", "GET", "/v1/audit/blobs/"+red.blob, nil)
	// the project's own records: quotas, policy layer, settings
	_, use := tn.call("", "GET", "/v1/projects/proj-red/usage", nil)
	var use2 wire.ProjectUsage
	_ = json.Unmarshal(use, &use2)
	quotaSet, _ := json.Marshal(use2.Set)
	_, pol := tn.call("", "GET", "/v1/projects/proj-red/policy", nil)
	_, set := tn.call("", "GET", "/v1/projects/proj-red/settings", nil)
	return fmt.Sprintf("sandbox %s %v execs %d approval %s keys %d projects %d secrets %+v grants %v blob %d quotas %s policy %s settings %s",
		sb.State, sb.Expires, len(execs.Execs), ap.State, len(keys.APIKeys), len(ps.Projects), secs.Secrets, gs, blob, quotaSet, pol, set)
}

func pathValues(pattern string) []string {
	var out []string
	for rest := pattern; ; {
		i := strings.Index(rest, "{")
		if i < 0 {
			return out
		}
		j := strings.Index(rest[i:], "}")
		out = append(out, rest[i+1:i+j])
		rest = rest[i+j:]
	}
}

// Every list a key may read names nothing of another project's: no id,
// and no count that includes them.
func TestListsHoldOnlyTheKeysProject(t *testing.T) {
	tn := newTenants(t)
	red := tn.makeRed()
	for _, r := range tn.srv.Routes() {
		m, path, _ := strings.Cut(r.Pattern, " ")
		if m != "GET" || strings.Contains(path, "{") {
			continue
		}
		for _, role := range tenant.Roles {
			code, b := tn.call(tn.keys["proj-blue"][role], m, path, nil)
			for _, id := range red.all {
				if bytes.Contains(b, []byte(id)) {
					t.Errorf("GET %s as blue's %s (%d) shows red's %q: %s", path, role, code, id, b)
				}
			}
		}
	}
	var l wire.SandboxList
	tn.must(tn.keys["proj-red"][tenant.Agent], "GET", "/v1/sandboxes", nil, 200, &l)
	if len(l.Sandboxes) != 1 {
		t.Errorf("red lists %d sandboxes, want its one", len(l.Sandboxes))
	}
	tn.must("", "GET", "/v1/sandboxes", nil, 200, &l)
	if len(l.Sandboxes) != 1 || l.Sandboxes[0].Project != "proj-red" {
		t.Errorf("the operator lists %+v", l.Sandboxes)
	}
}

// The role matrix: every route, as every role, is refused (403) exactly
// when the role is below the route's, and the routes' roles are those
// docs/tenancy.md documents.
func TestRoleMatrix(t *testing.T) {
	tn := newTenants(t)
	for _, r := range tn.srv.Routes() {
		for _, role := range append(tenant.Roles, tenant.Operator) {
			key := ""
			if role != tenant.Operator {
				key = tn.keys["proj-blue"][role]
			}
			m, path := fillRoute(r.Pattern, r.Param, missing[r.Kind], "x-000000000000")
			code, b := tn.call(key, m, path, struct{}{})
			var e wire.Error
			_ = json.Unmarshal(b, &e)
			refused := code == http.StatusForbidden && e.Code == wire.CodeDenied && strings.Contains(e.Message, "role")
			if want := !role.AtLeast(r.Role); refused != want {
				t.Errorf("%s as %s: %d %s; refused by role %v, want %v", r.Pattern, role, code, b, refused, want)
			}
		}
	}
	documented := docRoles(t)
	for _, r := range tn.srv.Routes() {
		if got, ok := documented[r.Pattern]; !ok || got != r.Role {
			t.Errorf("docs/tenancy.md: %s is documented as %q, the route needs %q", r.Pattern, got, r.Role)
		}
		delete(documented, r.Pattern)
	}
	for p := range documented {
		t.Errorf("docs/tenancy.md documents %s, which is no route", p)
	}
}

// Attack: a key of every role of blue starts a sandbox from red's
// snapshot (red's files): the answer is that for a template that does
// not exist, and red's own key and the operator still start from it.
func TestAnotherProjectsSnapshotIsNoTemplate(t *testing.T) {
	tn := newTenants(t)
	tn.makeRed()
	for _, role := range tenant.Roles {
		key := tn.keys["proj-blue"][role]
		c1, b1 := tn.call(key, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Template: "red-snap"})
		c2, b2 := tn.call(key, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Template: "non-snap"})
		if b1 = bytes.ReplaceAll(b1, []byte("red-snap"), []byte("non-snap")); c1 != c2 || c1 != http.StatusNotFound || !bytes.Equal(b1, b2) {
			t.Errorf("blue's %s from red's snapshot: %d %s; from none: %d %s", role, c1, b1, c2, b2)
		}
	}
	var sb wire.Sandbox
	tn.must(tn.keys["proj-red"][tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Template: "red-snap"}, 201, &sb)
	var tl wire.TemplateList
	tn.must("", "GET", "/v1/templates", nil, 200, &tl)
	seen := false
	for _, tp := range tl.Templates {
		seen = seen || tp.Name == "red-snap" && tp.Project == "proj-red"
	}
	if !seen {
		t.Errorf("the operator's templates %+v lack red's snapshot", tl.Templates)
	}
}

// Attack: a key revoked while its exec streams keeps reading the
// sandbox's output. Revoking it ends the stream at once, and the key
// is refused from then on.
func TestARevokedKeysStreamEnds(t *testing.T) {
	tn := newTenants(t)
	agent := tn.keys["proj-red"][tenant.Agent]
	var sb wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	b, _ := json.Marshal(wire.ExecRequest{Argv: []string{"sh", "-c", "echo start; sleep 30"}})
	req, _ := http.NewRequest("POST", tn.tcp.URL+"/v1/sandboxes/"+sb.ID+"/exec", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+agent)
	resp, err := tn.tcp.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	if n, err := resp.Body.Read(buf); err != nil || !bytes.Contains(buf[:n], []byte("start")) {
		t.Fatalf("the stream's first read: %q %v", buf[:n], err)
	}
	var keys wire.APIKeyList
	tn.must("", "GET", "/v1/apikeys", nil, 200, &keys)
	id := ""
	for _, k := range keys.APIKeys {
		if k.Name == "proj-red-agent" {
			id = k.ID
		}
	}
	revoked := time.Now()
	tn.must("", "DELETE", "/v1/apikeys/"+id, nil, 204, nil)
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
	select {
	case <-ended:
		if d := time.Since(revoked); d > 5*time.Second {
			t.Errorf("the stream ended %s after the revocation", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the revoked key's stream goes on")
	}
	if code, _ := tn.call(agent, "GET", "/v1/sandboxes", nil); code != http.StatusUnauthorized {
		t.Errorf("the revoked key answers %d", code)
	}
}

// A rotated key works alongside its successor until the overlap ends,
// then only the new one does; neither can name another project.
func TestRotationOverlapThenEnds(t *testing.T) {
	tn := newTenants(t)
	admin := tn.keys["proj-red"][tenant.Admin]
	var keys wire.APIKeyList
	tn.must(admin, "GET", "/v1/apikeys", nil, 200, &keys)
	var agentID string
	for _, k := range keys.APIKeys {
		if k.Role == "agent" {
			agentID = k.ID
		}
	}
	var nk wire.APIKey
	tn.must(admin, "POST", "/v1/apikeys/"+agentID+"/rotate", wire.APIKeyRotateRequest{OverlapSeconds: 1}, 201, &nk)
	if nk.Project != "proj-red" || nk.Role != "agent" || nk.Key == "" {
		t.Fatalf("rotated key: %+v", nk)
	}
	old := tn.keys["proj-red"][tenant.Agent]
	if code, _ := tn.call(old, "GET", "/v1/sandboxes", nil); code != 200 {
		t.Errorf("the old key within its overlap: %d", code)
	}
	time.Sleep(1500 * time.Millisecond)
	if code, _ := tn.call(old, "GET", "/v1/sandboxes", nil); code != http.StatusUnauthorized {
		t.Errorf("the old key after its overlap: %d", code)
	}
	if code, _ := tn.call(nk.Key, "GET", "/v1/sandboxes", nil); code != 200 {
		t.Errorf("the new key: %d", code)
	}
	// An admin makes keys of its own project only, and never above its role.
	code, body := tn.call(admin, "POST", "/v1/apikeys", wire.APIKeyRequest{Project: "proj-blue"})
	if code != http.StatusNotFound {
		t.Errorf("red's admin made a key of blue: %d %s", code, body)
	}
	if code, body := tn.call(tn.keys["proj-red"][tenant.Reviewer], "POST", "/v1/apikeys", wire.APIKeyRequest{Role: "admin"}); code != http.StatusForbidden {
		t.Errorf("a reviewer made a key: %d %s", code, body)
	}
}

// A project is removed only once its sandboxes are stopped; its keys stop
// at once, its records stay, and its name is not made again.
func TestRemovingAProject(t *testing.T) {
	tn := newTenants(t)
	agent := tn.keys["proj-red"][tenant.Agent]
	var sb wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	tn.must("", "DELETE", "/v1/projects/proj-red", nil, 409, nil)
	tn.must(agent, "DELETE", "/v1/sandboxes/"+sb.ID, nil, 204, nil)
	tn.must("", "DELETE", "/v1/projects/proj-red", nil, 204, nil)
	if code, _ := tn.call(agent, "GET", "/v1/sandboxes", nil); code != http.StatusUnauthorized {
		t.Errorf("a removed project's key answers %d", code)
	}
	var got wire.Sandbox
	tn.must("", "GET", "/v1/sandboxes/"+sb.ID, nil, 200, &got)
	if got.Project != "proj-red" {
		t.Errorf("a removed project's record: %+v", got)
	}
	tn.must("", "POST", "/v1/projects", wire.ProjectRequest{Name: "proj-red"}, 409, nil)
	tn.must("", "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Project: "proj-red"}, 404, nil)
	tn.must("", "DELETE", "/v1/projects/default", nil, 409, nil)
	tn.must("", "POST", "/v1/projects", wire.ProjectRequest{Name: "Bad Name"}, 400, nil)
}

// The policy file's section for a project applies to that project's
// sandboxes only.
func TestProjectPolicySection(t *testing.T) {
	tn := newTenantsWith(t, "classes: {read: allow}\nprojects:\n  proj-red:\n    classes: {read: ask}\n")
	var red, blue wire.Sandbox
	tn.must(tn.keys["proj-red"][tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &red)
	tn.must(tn.keys["proj-blue"][tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &blue)
	if !slices.Contains(red.PolicySources, "project:proj-red") || slices.Contains(blue.PolicySources, "project:proj-red") {
		t.Fatalf("policy sources: red %v, blue %v", red.PolicySources, blue.PolicySources)
	}
	var d wire.Decision
	tn.must(tn.keys["proj-red"][tenant.Agent], "POST", "/v1/sandboxes/"+red.ID+"/policy/check", wire.CheckRequest{Argv: []string{"cat", "README"}, Cwd: "/workspace"}, 200, &d)
	if d.Action != wire.ActionAsk {
		t.Errorf("red's read: %s, want ask", d.Action)
	}
}
