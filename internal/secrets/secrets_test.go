package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/sandboxnet"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// clock is a movable clock for grant expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		return time.Now()
	}
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = time.Now()
	}
	c.t = c.t.Add(d)
}

// fixture is the module attached to a manager on the fake backend (no
// root), with its store, audit log, redactor and clock.
type fixture struct {
	s   *Secrets
	m   *manager.Manager
	net *sandboxnet.Net
	st  *store.Store
	log *audit.Log
	red *redact.Redactor
	clk *clock
	dir string // the store's and templates' directory
}

// onFake attaches New(keyFile) (keyFile "": a daemon without secrets);
// configure (nil: none) changes the manager's Config before New.
func onFake(t *testing.T, keyFile string, configure func(*manager.Config)) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), red: redact.New(), clk: &clock{}}
	var err error
	if f.st, err = store.Open(filepath.Join(f.dir, "airlock.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.st.Close() })
	if f.log, err = audit.Open(context.Background(), audit.Config{Store: f.st, Redactor: f.red, KeyFile: filepath.Join(f.dir, "audit.key")}); err != nil {
		t.Fatal(err)
	}
	f.s = New(keyFile)
	// The network module (no egress service: the fake has no network)
	// shows the sandbox's egress policy, brokered grants included.
	f.net = sandboxnet.New(sandboxnet.Config{})
	f.m = f.manager(t, f.s, f.red, configure)
	return f
}

// manager is a manager on f's store and audit log with mod attached.
func (f *fixture) manager(t *testing.T, mod hook.Module, red sandbox.Redactor, configure func(*manager.Config)) *manager.Manager {
	t.Helper()
	tpls, err := template.Open(filepath.Join(f.dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: f.st, Audit: f.log, Redactor: red,
		Now: f.clk.Now, Logf: t.Logf, Modules: []hook.Module{mod, f.net}}
	if configure != nil {
		configure(&cfg)
	}
	m, err := manager.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m
}

// events are the audit events of kind (all of them: "").
func (f *fixture) events(t *testing.T, kind string) []*audit.Event {
	t.Helper()
	evs, err := f.log.Query(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*audit.Event
	for _, e := range evs {
		if kind == "" || e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// sh runs a shell line in the sandbox: what the caller was streamed, the
// exec's id, and its error.
func (f *fixture) sh(t *testing.T, id, line string) (string, string, error) {
	t.Helper()
	var out bytes.Buffer
	execID, _, err := f.m.Exec(context.Background(), id, sandbox.ExecRequest{Argv: []string{"sh", "-c", line}}, nil, &out, nil)
	return out.String(), execID, err
}

const value = "s3cr3t-value-9f8e7d6c5b4a"

// A secret's life: the key is made 0600 on first use, the value is kept
// sealed, learned by the redactor, never on the record; listed by name,
// deleted; bad names and values refused.
func TestSecretLife(t *testing.T) {
	ctx := context.Background()
	keyFile := filepath.Join(t.TempDir(), "secrets.key")
	f := onFake(t, keyFile, nil)
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("key file: %v %v", st, err)
	}
	info, err := f.s.Set(ctx, "", "DEPLOY_TOKEN", []byte(value))
	if err != nil || info.Name != "DEPLOY_TOKEN" || info.Created.IsZero() {
		t.Fatalf("set: %+v %v", info, err)
	}
	if got := f.red.String("x " + value); strings.Contains(got, value) {
		t.Errorf("the redactor did not learn the value: %q", got)
	}
	sec, err := f.st.GetSecret(ctx, "default", "DEPLOY_TOKEN")
	if err != nil || bytes.Contains(sec.Sealed, []byte(value)) {
		t.Fatalf("stored: %v, sealed value holds it in the clear: %v", err, bytes.Contains(sec.Sealed, []byte(value)))
	}
	l, err := f.s.List(ctx, "")
	if err != nil || len(l) != 1 || l[0].Name != "DEPLOY_TOKEN" {
		t.Fatalf("list: %+v %v", l, err)
	}
	if evs := f.events(t, "secret.set"); len(evs) != 1 || !strings.Contains(string(evs[0].Payload), `"bytes":25`) {
		t.Errorf("secret.set events: %d", len(evs))
	}
	for name, v := range map[string]string{"1BAD": "v", "A-B": "v", "EMPTY": "", "NUL": "a\x00b", "BIG": strings.Repeat("x", MaxValueBytes+1)} {
		if _, err := f.s.Set(ctx, "", name, []byte(v)); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("set %q (%d bytes): %v, want invalid", name, len(v), err)
		}
	}
	if err := f.s.Delete(ctx, "", "DEPLOY_TOKEN"); err != nil {
		t.Fatal(err)
	}
	if l, err := f.s.List(ctx, ""); err != nil || len(l) != 0 {
		t.Errorf("list after delete: %+v %v", l, err)
	}
	if err := f.s.Delete(ctx, "", "DEPLOY_TOKEN"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("delete again: %v, want not found", err)
	}
	if len(f.events(t, "secret.delete")) != 1 {
		t.Error("no secret.delete event")
	}
	for _, e := range f.events(t, "") {
		if bytes.Contains(e.Payload, []byte(value)) {
			t.Errorf("event %s holds the value: %s", e.Kind, e.Payload)
		}
	}
}

// A module without a key keeps no secrets and says so; one not attached
// fails every call.
func TestNoKeyAndNotAttached(t *testing.T) {
	ctx := context.Background()
	f := onFake(t, "", nil)
	if _, err := f.s.Set(ctx, "", "A", []byte("v")); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "keeps no secrets") {
		t.Errorf("set without a key: %v", err)
	}
	if _, err := f.s.List(ctx, ""); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("list without a key: %v", err)
	}
	if err := f.s.Delete(ctx, "", "A"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("delete without a key: %v", err)
	}
	if _, err := f.s.Grant(ctx, "A", GrantRequest{SandboxID: "sb-x", Hosts: []string{"a.test"}}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("grant without a key: %v", err)
	}
	if l, err := f.s.Grants(ctx, ""); err != nil || len(l) != 0 {
		t.Errorf("grants without a key: %+v %v", l, err)
	}
	sb, err := f.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if env, uses, err := f.s.SecretEnv(ctx, hook.SandboxRef{ID: sb.ID}); env != nil || uses != nil || err != nil {
		t.Errorf("secret env without a key: %v %v %v", env, uses, err)
	}
	lone := New(filepath.Join(t.TempDir(), "k"))
	if _, err := lone.List(ctx, ""); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "not attached") {
		t.Errorf("list before attach: %v", err)
	}
	if _, err := lone.Grants(ctx, ""); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("grants before attach: %v", err)
	}
	if err := lone.Revoke(ctx, "sg-1"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("revoke before attach: %v", err)
	}
	if err := lone.EndTaskGrants(ctx, "sb", "t"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("end task grants before attach: %v", err)
	}
}

// The stored values are learned when the module is attached (before the
// manager does anything), so that a restarted daemon redacts them before
// anything is granted; another key, or a damaged one, fails New.
func TestKeyAtAttach(t *testing.T) {
	ctx := context.Background()
	keyFile := filepath.Join(t.TempDir(), "secrets.key")
	f := onFake(t, keyFile, nil)
	if _, err := f.s.Set(ctx, "", "K", []byte(value)); err != nil {
		t.Fatal(err)
	}
	fresh := redact.New()
	again := New(keyFile)
	f.manager(t, again, fresh, nil)
	if got := fresh.String("x " + value); strings.Contains(got, value) {
		t.Errorf("a new daemon's redactor does not know the stored value: %q", got)
	}
	if l, err := again.List(ctx, ""); err != nil || len(l) != 1 {
		t.Errorf("list on the new daemon: %+v %v", l, err)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	_ = os.WriteFile(other, bytes.Repeat([]byte{7}, 32), 0o600)
	tpls, err := template.Open(filepath.Join(t.TempDir(), "templates"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: f.st, Modules: []hook.Module{New(other)}}
	if _, err := manager.New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "cannot be opened with this daemon's secret key") {
		t.Errorf("another key: %v", err)
	}
	_ = os.WriteFile(other, []byte("short"), 0o600)
	cfg.Modules = []hook.Module{New(other)}
	if _, err := manager.New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "want 32") {
		t.Errorf("a short key: %v", err)
	}
	cfg.Modules = []hook.Module{New(filepath.Join(t.TempDir(), "no-dir", "k"))}
	if _, err := manager.New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "secret key") {
		t.Errorf("a key that cannot be made: %v", err)
	}
}

// decodeUses is the "secrets" payload of an exec.start event.
func decodeUses(t *testing.T, e *audit.Event) []map[string]any {
	t.Helper()
	var p struct {
		Secrets  []map[string]any `json:"secrets"`
		EnvNames []string         `json:"env_names"`
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.EnvNames, "DEPLOY_TOKEN") || slices.Contains(p.EnvNames, "TOKEN_IN") {
		t.Errorf("a granted variable is on env_names: %v", p.EnvNames)
	}
	return p.Secrets
}

// execStart is the exec.start event of execID.
func (f *fixture) execStart(t *testing.T, execID string) *audit.Event {
	t.Helper()
	for _, e := range f.events(t, "exec.start") {
		if e.ExecID == execID {
			return e
		}
	}
	t.Fatalf("no exec.start of %s", execID)
	return nil
}

// Use hands the daemon a value for its own use (a registry credential)
// and records that it did, by name and purpose, never the value; a
// missing secret or a daemon with no key is an error.
func TestSecretUse(t *testing.T) {
	ctx := context.Background()
	f := onFake(t, filepath.Join(t.TempDir(), "secrets.key"), nil)
	if _, err := f.s.Set(ctx, "", "REG", []byte(value)); err != nil {
		t.Fatal(err)
	}
	v, err := f.s.Use(ctx, "REG", "template.import")
	if err != nil || string(v) != value {
		t.Fatalf("use: %q %v", v, err)
	}
	evs := f.events(t, "secret.use")
	if len(evs) != 1 || !strings.Contains(string(evs[0].Payload), `"purpose":"template.import"`) || strings.Contains(string(evs[0].Payload), value) {
		t.Errorf("secret.use events: %+v", evs)
	}
	if _, err := f.s.Use(ctx, "NONE", "template.import"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a missing secret: %v", err)
	}
	if _, err := onFake(t, "", nil).s.Use(ctx, "REG", "x"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("no key: %v", err)
	}
}
