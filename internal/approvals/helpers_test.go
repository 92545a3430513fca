package approvals

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/explain"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// The approvals module's tests run on the fake backend (runtime/fake):
// no root, milliseconds per sandbox. Commands run as host processes in
// the sandbox's directory, so they touch only relative paths.

// clock is a movable clock for deadlines and grant expiry.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// rig is the module attached to a manager on the fake backend, with its
// store, audit log, redactor and clock.
type rig struct {
	a   *Approvals
	ex  *explain.Explain // the policy check the API serves
	m   *manager.Manager
	st  *store.Store
	log *audit.Log
	red *redact.Redactor
	clk *clock
}

// operator is the context of the operator on the unix socket: it may
// decide approvals and sees held commands as they would run.
var operator = sandbox.AsApprover(sandbox.WithActor(context.Background(), "operator:alice"))

// agent is the context of an API key's caller.
var agent = sandbox.WithActor(context.Background(), "apikey:k-1")

// newRig attaches New(cfg) to a manager whose policy file is pol ("": the
// built-in defaults).
func newRig(t *testing.T, cfg Config, pol string) *rig {
	t.Helper()
	r := &rig{red: redact.New(), clk: &clock{}}
	r.a, r.ex = New(cfg), explain.New()
	r.m, r.st, r.log = newManager(t, pol, r.red, r.clk.Now, r.a, r.ex)
	return r
}

// newManager is a manager on the fake backend, a fresh store and audit
// log, with mods attached.
func newManager(t *testing.T, pol string, red *redact.Redactor, now func() time.Time, mods ...hook.Module) (*manager.Manager, *store.Store, *audit.Log) {
	t.Helper()
	cfg := managerConfig(t, pol, red, now, mods...)
	m, err := manager.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m, cfg.Store, cfg.Audit
}

// managerConfig is newManager's Config (red nil: a new redactor; now
// nil: time.Now), its policy file pol ("": the built-in defaults).
func managerConfig(t *testing.T, pol string, red *redact.Redactor, now func() time.Time, mods ...hook.Module) manager.Config {
	t.Helper()
	if red == nil {
		red = redact.New()
	}
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
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log, Redactor: red,
		Now: now, Logf: t.Logf, Modules: mods}
	if pol != "" {
		if cfg.Policy, err = policy.Parse([]byte(pol)); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

func (r *rig) sandbox(t *testing.T) string {
	t.Helper()
	sb, err := r.m.Create(context.Background(), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return sb.ID
}

// sh runs a shell line in sandbox id as the agent: its output, the
// exec's id, and the error (a *sandbox.PolicyError when the policy
// stopped it). wait < 0: the exec does not wait for a human.
func (r *rig) sh(t *testing.T, id, line string, wait time.Duration, env ...string) (string, *sandbox.PolicyError, error) {
	t.Helper()
	req := sandbox.ExecRequest{Argv: []string{"sh", "-c", line}, Env: env, ApprovalWait: max(wait, 0), NoWait: wait < 0}
	var out bytes.Buffer
	_, _, err := r.m.Exec(agent, id, req, nil, &out, &out)
	var pe *sandbox.PolicyError
	errors.As(err, &pe)
	return out.String(), pe, err
}

// pending waits for sandbox id's one pending approval.
func (r *rig) pending(t *testing.T, id string) *Approval {
	t.Helper()
	for range 500 {
		l, err := r.a.List(operator, id, store.ApprovalPending)
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 {
			return l[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no pending approval")
	return nil
}

// events are the audit events of kind.
func (r *rig) events(t *testing.T, kind string) []*audit.Event {
	t.Helper()
	evs, err := r.log.Query(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*audit.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// execs are sandbox id's exec records.
func (r *rig) execs(t *testing.T, id string) []*sandbox.Exec {
	t.Helper()
	l, err := r.a.c.Execs(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// exists says whether path is in sandbox id (the daemon's own view).
func (r *rig) exists(t *testing.T, id, path string) bool {
	t.Helper()
	fs, err := r.m.Files(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fs.Stat(context.Background(), path)
	return err == nil
}
