package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// tenantDoor is the door on the fake backend (no root) with projects red
// and blue and an E2B key of each role in each.
type tenantDoor struct {
	*door
	srv  *Server
	keys map[string]map[tenant.Role]string
}

func newTenantDoor(t *testing.T) *tenantDoor {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte("classes: {read: allow, build: allow, write: allow, unknown: allow}\n"))
	if err != nil {
		t.Fatal(err)
	}
	stk, err := stack.New(context.Background(), stack.Config{Config: manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Policy: pol, Logf: t.Logf},
		TaskDir: filepath.Join(dir, "tasks"), SnapshotDir: filepath.Join(dir, "snapshots")})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Manager: stk.Manager, Files: stk.Files, Usage: stk.Usage, Network: stk.Network, Snapshots: stk.Snapshots, Redactor: stk.Records, Keys: stk.Keys, Owners: stk.Projects, Domain: testDomain})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		_ = stk.Manager.Shutdown(context.Background())
		_ = st.Close()
	})
	td := &tenantDoor{door: &door{t: t, m: stk.Manager, net: stk.Network, keys: stk.Keys, url: hs.URL}, srv: srv, keys: map[string]map[tenant.Role]string{}}
	ctx := context.Background()
	for _, p := range []string{"proj-red", "proj-blue"} {
		if _, err := stk.Projects.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		td.keys[p] = map[tenant.Role]string{}
		for _, r := range tenant.Roles {
			_, key, err := stk.Keys.Make(ctx, apikeys.Request{Name: p + "-" + string(r), Format: "e2b", Project: p, Role: r})
			if err != nil {
				t.Fatal(err)
			}
			td.keys[p][r] = key
		}
	}
	return td
}

// createAs makes a sandbox with key; its id and access token.
func (td *tenantDoor) createAs(key string) (id, token string) {
	td.t.Helper()
	resp, b := td.call("POST", "/v2/sandboxes", []byte(`{"templateID":"base","timeout":300}`), map[string]string{"X-API-KEY": key, "Content-Type": "application/json"})
	var c struct{ SandboxID, EnvdAccessToken string }
	if resp.StatusCode != 201 || json.Unmarshal(b, &c) != nil {
		td.t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	return c.SandboxID, c.EnvdAccessToken
}

const (
	missingSandbox  = "sb0000000000000000000000"
	missingTemplate = "non-snap"
)

// fillE2B makes a control route's request path with id for {id}.
func fillE2B(pattern, id string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok { // a pattern without a method: every method
		method, path = "GET", pattern
	}
	return method, strings.ReplaceAll(path, "{id}", id)
}

// redState is what blue must not change of red's, as one string.
func (td *tenantDoor) redState(redKey, redID, redToken string) string {
	td.t.Helper()
	key := map[string]string{"X-API-KEY": redKey}
	_, sb := td.call("GET", "/sandboxes/"+redID, nil, key)
	_, snaps := td.call("GET", "/snapshots", nil, key)
	_, file := td.call("GET", "/files?path=/home/user/plan.txt", nil, envdHeaders(redID, redToken, nil))
	return fmt.Sprintf("sandbox %s\nsnapshots %s\nfile %s", sb, snaps, file)
}

// Attack: keys of every role of project blue send every route of the
// door with red's ids: each control route with red's sandbox (or
// snapshot) id, each in-sandbox route with red's sandbox id and the
// access token of blue's own sandbox. Each answer is the answer for an id
// that does not exist, byte for byte; the lists name nothing of red's;
// nothing of red's changes. A route the door registers that this test
// does not know fails it.
func TestE2BDoorHidesAnotherProjectsObjects(t *testing.T) {
	td := newTenantDoor(t)
	redKey := td.keys["proj-red"][tenant.Agent]
	redID, redToken := td.createAs(redKey)
	if resp, b := td.call("POST", "/files?path=plan.txt", []byte("red's plan"), envdHeaders(redID, redToken, map[string]string{"Content-Type": "application/octet-stream"})); resp.StatusCode != 200 {
		t.Fatalf("write: %d %s", resp.StatusCode, b)
	}
	if resp, b := td.call("POST", "/sandboxes/"+redID+"/snapshots", []byte(`{"name":"red-snap"}`), map[string]string{"X-API-KEY": redKey, "Content-Type": "application/json"}); resp.StatusCode != 201 {
		t.Fatalf("red's snapshot: %d %s", resp.StatusCode, b)
	}
	before := td.redState(redKey, redID, redToken)
	// the routes without a sandbox id in the path, and what is sent
	lists := map[string]bool{"GET /sandboxes": true, "GET /v2/sandboxes": true, "GET /snapshots": true}
	creates := map[string]bool{"POST /sandboxes": true, "POST /v2/sandboxes": true}
	refused := map[string]bool{"/": true, "GET /sandboxes/metrics": true} // answered 501 whoever asks
	control, envd := td.srv.Routes()
	if len(control) < 15 || len(envd) < 15 {
		t.Fatalf("the door lists %d control and %d in-sandbox routes", len(control), len(envd))
	}
	for _, role := range tenant.Roles {
		blueKey := td.keys["proj-blue"][role]
		blueID, blueToken := td.createAs(blueKey)
		hdr := map[string]string{"X-API-KEY": blueKey, "Content-Type": "application/json"}
		for _, pat := range control {
			switch {
			case strings.Contains(pat, "{id}"):
				foreign, none := redID, missingSandbox
				if !strings.Contains(pat, "/sandboxes/{id}") { // DELETE /templates/{id}: a snapshot
					foreign, none = "red-snap", missingTemplate
				}
				m, p1 := fillE2B(pat, foreign)
				_, p2 := fillE2B(pat, none)
				td.same(pat, role, foreign, none, m, p1, p2, []byte(`{}`), []byte(`{}`), hdr, hdr)
			case lists[pat]:
				m, p := fillE2B(pat, "")
				resp, b := td.call(m, p, nil, hdr)
				for _, red := range []string{redID, "red-snap"} {
					if bytes.Contains(b, []byte(red)) {
						t.Errorf("%s as blue's %s (%d) shows red's %s: %s", pat, role, resp.StatusCode, red, b)
					}
				}
			case creates[pat]:
				m, p := fillE2B(pat, "")
				td.same(pat, role, "red-snap", missingTemplate, m, p, p, []byte(`{"templateID":"red-snap"}`), []byte(`{"templateID":"`+missingTemplate+`"}`), hdr, hdr)
			case refused[pat]:
				m, p := fillE2B(pat, "")
				if resp, b := td.call(m, p, nil, hdr); resp.StatusCode != http.StatusNotImplemented {
					t.Errorf("%s: %d %s, want 501", pat, resp.StatusCode, b)
				}
			default:
				t.Errorf("control route %s is not covered by this test: say how another project's ids reach it", pat)
			}
		}
		for _, pat := range envd {
			m, p := fillE2B(pat, "")
			if strings.Contains(p, "{") {
				t.Errorf("in-sandbox route %s has a path value this test cannot fill", pat)
				continue
			}
			body := []byte(`{}`)
			h1 := envdHeaders(redID, blueToken, map[string]string{"Content-Type": "application/json"})
			h2 := envdHeaders(missingSandbox, blueToken, map[string]string{"Content-Type": "application/json"})
			if code := td.same(pat, role, redID, missingSandbox, m, p+"?path=/home/user/plan.txt", p+"?path=/home/user/plan.txt", body, body, h1, h2); code != http.StatusUnauthorized {
				t.Errorf("in-sandbox %s with red's id and blue's token as blue's %s: %d, want 401", pat, role, code)
			}
		}
		// blue's own token does work on blue's sandbox: the 401s above
		// are the other sandbox's, not a broken token
		if resp, b := td.call("GET", "/files?path=/home/user/none.txt", nil, envdHeaders(blueID, blueToken, nil)); resp.StatusCode != http.StatusNotFound {
			t.Errorf("blue's own sandbox: %d %s", resp.StatusCode, b)
		}
	}
	if after := td.redState(redKey, redID, redToken); after != before || !strings.Contains(after, "red's plan") || !strings.Contains(after, "red-snap") {
		t.Errorf("blue's requests changed red's objects:\nbefore %s\nafter  %s", before, after)
	}
}

// same sends one request with red's id and one with a missing id, and
// says (by failing the test) when their answers differ beyond the id.
func (td *tenantDoor) same(pat string, role tenant.Role, foreign, none, method, p1, p2 string, b1, b2 []byte, h1, h2 map[string]string) int {
	td.t.Helper()
	r1, a1 := td.call(method, p1, b1, h1)
	r2, a2 := td.call(method, p2, b2, h2)
	a1 = bytes.ReplaceAll(a1, []byte(foreign), []byte(none))
	if r1.StatusCode != r2.StatusCode || !bytes.Equal(a1, a2) {
		td.t.Errorf("%s as blue's %s: red's id answers %d %s; a missing one %d %s", pat, role, r1.StatusCode, a1, r2.StatusCode, a2)
	}
	if r1.StatusCode < 400 {
		td.t.Errorf("%s as blue's %s: red's id answers %d %s", pat, role, r1.StatusCode, a1)
	}
	return r1.StatusCode
}
