package review

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// The module's tests run on the fake backend (runtime/fake): commands are
// host processes of the test user, no root needed. They show what the
// module records and bundles, never isolation.

// rig is the review module attached to a manager on the fake backend,
// with a store, an audit log and a redactor of its own.
type rig struct {
	m   *manager.Manager
	rv  *Review
	st  *store.Store
	log *audit.Log
	red *redact.Redactor
	dir string // the tasks' directory (Config.TaskDir)
}

// allowAll is a policy that allows every class (the tests are about what
// is recorded, not decided), with install scripts denied.
const allowAll = "classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: allow, unknown: allow, persist: allow}\n" +
	"outside_scope: allow\ninstall_scripts: deny\n"

// newRig makes a rig; configure (nil: none) changes the manager's Config
// before New.
func newRig(t *testing.T, configure func(*manager.Config)) *rig {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(filepath.Join(root, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(root, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(root, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(allowAll))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{rv: New(Config{TaskDir: filepath.Join(root, "tasks")}), st: st, log: log, red: red, dir: filepath.Join(root, "tasks")}
	cfg := manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log, Redactor: red, Policy: pol, Logf: t.Logf,
		Modules: []hook.Module{r.rv}}
	if configure != nil {
		configure(&cfg)
	}
	if r.m, err = manager.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.m.Shutdown(context.Background()) })
	return r
}

// sandbox creates a sandbox.
func (r *rig) sandbox(t *testing.T) string {
	t.Helper()
	sb, err := r.m.Create(context.Background(), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return sb.ID
}

// sh runs line in sandbox id with sh -c, and returns its exec id and
// stdout; it must exit 0.
func (r *rig) sh(t *testing.T, id, line string) (string, string) {
	t.Helper()
	var out bytes.Buffer
	execID, st, err := r.m.Exec(context.Background(), id, sandbox.ExecRequest{Argv: []string{"sh", "-c", line}, NoWait: true}, nil, &out, nil)
	if err != nil || st.Code != 0 {
		t.Fatalf("%q: %v %+v", line, err, st)
	}
	return execID, out.String()
}

// events are the audit events of sandbox id of kind, payloads decoded.
func (r *rig) events(t *testing.T, id, kind string) []map[string]any {
	t.Helper()
	evs, err := r.log.Query(context.Background(), store.AuditFilter{SandboxID: id, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		var p map[string]any
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		p["_kind"], p["_exec"] = e.Kind, e.ExecID
		out = append(out, p)
	}
	return out
}

// record appends an event to the audit record, as a module would.
func (r *rig) record(t *testing.T, e audit.Entry) {
	t.Helper()
	if err := r.rv.c.Record(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// finished is a task record of sandbox id, finished at when.
func finished(id, sandboxID string, when time.Time) *store.Task {
	return &store.Task{ID: id, SandboxID: sandboxID, State: "finished", Spec: json.RawMessage(`{}`), Created: when.Add(-time.Hour), Finished: &when}
}
