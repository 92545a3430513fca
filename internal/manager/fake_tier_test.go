package manager

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
)

// The fast tier: a manager on the fake backend (runtime/fake), which
// runs commands as host processes of the test user, needs no root and
// takes milliseconds per sandbox. What these tests show is the manager's
// behaviour, never isolation: that is the real backends' end-to-end tier.

// fakeTierManager is a manager on a fresh store and audit log whose
// backend is the fake.
func fakeTierManager(t *testing.T) (*Manager, *audit.Log) {
	t.Helper()
	return fakeTierManagerWith(t, nil)
}

// fakeTierManagerWith is fakeTierManager with its Config changed by
// configure (nil: as is) before New.
func fakeTierManagerWith(t *testing.T, configure func(*Config)) (*Manager, *audit.Log) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls := testTemplates(t)
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log,
		Redactor: red, Logf: t.Logf}
	if configure != nil {
		configure(&cfg)
	}
	m, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m, log
}

// A sandbox's life through the manager: create, the policy gate, an exec
// whose output is streamed and stored (a learned secret redacted in the
// stored copy and in the record of its argv),
// a file written through the file API and seen by a command, destroy,
// and the audit chain that records it all and verifies.
func TestFakeTierCreateExecDestroy(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	m, log := fakeTierManager(t)
	const secret = "tier-secret-value-7f3a"
	sb, err := m.Create(ctx, sandbox.CreateRequest{Env: []string{"API_TOKEN=" + secret}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != "running" || sb.Backend != fakert.Name || sb.Isolation.Boundary != fakert.Boundary {
		t.Fatalf("created %+v", sb)
	}
	// the policy gate: reading a secret-named variable is secret access
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo $API_TOKEN"}}, nil, nil, nil); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("exec that reads the token: %v, want denied by the policy", err)
	}
	var out, errOut bytes.Buffer
	execID, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo hello " + secret + "; echo oops >&2; exit 3"}}, nil, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 3 || !strings.HasPrefix(out.String(), "hello ") || errOut.String() != "oops\n" {
		t.Errorf("exec: code %d stdout %q stderr %q", st.Code, out.String(), errOut.String())
	}
	stored, err := output(m, ctx, sb.ID, execID, "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte(secret)) || !bytes.HasPrefix(stored, []byte("hello ")) {
		t.Errorf("stored stdout %q: want it without the secret", stored)
	}
	fs, err := m.Files(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.WriteFile(ctx, "/workspace/note.txt", strings.NewReader("from the API\n"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"cat", "note.txt"}}, nil, &out, nil); err != nil || st.Code != 0 || out.String() != "from the API\n" {
		t.Errorf("cat the API's file: %v %+v %q", err, st, out.String())
	}
	if err := m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	got, err := m.Get(ctx, sb.ID)
	if err != nil || got.State != "stopped" || got.StopReason != sandbox.StopDestroyed {
		t.Errorf("after destroy: %+v %v", got, err)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("exec in a destroyed sandbox: %v, want a conflict", err)
	}
	var kinds []string
	evs, err := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
		if bytes.Contains(e.Payload, []byte(secret)) {
			t.Errorf("audit event %s holds the secret: %s", e.Kind, e.Payload)
		}
	}
	for _, want := range []string{"sandbox.create", "exec.start", "exec.end", "sandbox.stop"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("audit events %q lack %s", kinds, want)
		}
	}
	if rep, err := log.Verify(ctx); err != nil || !rep.OK() {
		t.Errorf("audit verify: %+v %v", rep, err)
	}
	t.Logf("create, 2 execs, file write, destroy, audit verify: %v", time.Since(start))
}

// Pause through the manager: a paused sandbox runs nothing, its state
// says so, and after Resume it takes commands again; its command that
// was running went on.
func TestFakeTierPauseResume(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := m.Pause(ctx, sb.ID); err != nil || p.State != "paused" {
		t.Fatalf("pause: %+v %v", p, err)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); err == nil {
		t.Error("exec in a paused sandbox succeeded")
	}
	if _, err := m.Pause(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("second pause: %v, want a conflict", err)
	}
	if r, err := m.Resume(ctx, sb.ID); err != nil || r.State != "running" {
		t.Fatalf("resume: %+v %v", r, err)
	}
	var out bytes.Buffer
	if _, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"echo", "again"}}, nil, &out, nil); err != nil || st.Code != 0 || out.String() != "again\n" {
		t.Errorf("exec after resume: %v %+v %q", err, st, out.String())
	}
}
