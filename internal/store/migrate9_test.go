package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

type nopRedactor struct{}

func (nopRedactor) Redact(b []byte) ([]byte, bool) { return b, false }
func (nopRedactor) JSON(doc []byte) []byte         { return doc }

// oldEvents writes n chained events as schema 8 held them (no project),
// hashed as audit did then, alternating between the two sandboxes.
func oldEvents(t *testing.T, st *store.Store, n int, sandboxes ...string) (last string, at time.Time) {
	t.Helper()
	prev := ""
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		e := &audit.Event{Seq: int64(i), Time: t0.Add(time.Duration(i) * time.Second), SandboxID: sandboxes[i%len(sandboxes)], Actor: "operator",
			Kind: "exec.end", Payload: json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`), Prev: prev}
		h, err := audit.HashOf(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.ExecRaw(st, `INSERT INTO audit_events (seq, time, sandbox_id, task_id, exec_id, actor, kind, payload, prev, hash) VALUES (?, ?, ?, '', '', ?, ?, ?, ?, ?)`,
			e.Seq, e.Time.UnixNano(), e.SandboxID, e.Actor, e.Kind, string(e.Payload), e.Prev, h); err != nil {
			t.Fatal(err)
		}
		prev, at = h, e.Time
	}
	return prev, at
}

// A database at schema 8 with secrets, grants (one to a sandbox of
// another project than default) and audit events upgrades to 9 with
// nothing lost: the secrets go to default (and to the project a grant
// was made to), each grant keeps working in its sandbox's project, and
// the old events verify in one chain with the new ones.
func TestSecretsAndAuditMigrationKeepsEverything(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "airlock.db")
	old, err := store.OpenAt(path, store.SecretsVersion-1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := old.PutProject(ctx, &store.Project{ID: "red", Created: now}); err != nil {
		t.Fatal(err)
	}
	for _, sb := range []*store.Sandbox{{ID: "sb-def", State: "running", Created: now}, {ID: "sb-red", State: "running", Created: now, Project: "red"}} {
		if err := old.PutSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO secrets (name, sealed, created, updated) VALUES ('A', X'01', 1, 2), ('B', X'02', 3, 4)`,
		`INSERT INTO secret_grants (id, secret, sandbox_id, task_id, mode, env, hosts, placeholder, created, expires, created_by, headers)
			VALUES ('sg-1', 'A', 'sb-def', '', 'env', 'A', '["a.test"]', '', 1, 9000000000000000000, 'operator', NULL),
			       ('sg-2', 'A', 'sb-red', '', 'broker', 'A', '["a.test"]', 'ph', 1, 9000000000000000000, 'operator', '["X-Key"]'),
			       ('sg-3', 'B', 'sb-def', '', 'env', 'BEE', '["b.test"]', '', 1, 2, 'operator', NULL)`,
	} {
		if err := store.ExecRaw(old, q); err != nil {
			t.Fatal(err)
		}
	}
	prev, at := oldEvents(t, old, 6, "sb-def", "sb-red", "")
	// A seventh old event of sb-def's refers to a blob.
	data := []byte(strings.Repeat("old output ", 500))
	sum := sha256.Sum256(data)
	blob := hex.EncodeToString(sum[:])
	e7 := &audit.Event{Seq: 7, Time: at.Add(time.Second), SandboxID: "sb-def", Actor: "operator", Kind: "exec.end",
		Payload: json.RawMessage(`{"stdout":{"blob":"` + audit.BlobRef(blob) + `","bytes":` + strconv.Itoa(len(data)) + `}}`), Prev: prev}
	h7, _ := audit.HashOf(e7)
	if err := store.ExecRaw(old, `INSERT INTO audit_events (seq, time, sandbox_id, task_id, exec_id, actor, kind, payload, prev, hash) VALUES (7, ?, 'sb-def', '', '', 'operator', 'exec.end', ?, ?, ?)`,
		e7.Time.UnixNano(), string(e7.Payload), e7.Prev, h7); err != nil {
		t.Fatal(err)
	}
	if err := store.ExecRaw(old, `INSERT INTO audit_blobs (hash, data, created) VALUES (?, ?, 1)`, blob, data); err != nil {
		t.Fatal(err)
	}
	old.Close()

	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secs, err := st.ListSecrets(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range secs {
		got = append(got, s.Project+"/"+s.Name+"/"+string(rune('0'+s.Sealed[0])))
	}
	if strings.Join(got, " ") != "default/A/1 default/B/2 red/A/1" {
		t.Errorf("secrets after the upgrade: %v", got)
	}
	grants, err := st.ListSecretGrants(ctx, "", "")
	if err != nil || len(grants) != 3 {
		t.Fatalf("grants after the upgrade: %+v %v", grants, err)
	}
	for _, want := range []struct{ id, project, secret, header string }{{"sg-1", "default", "A", ""}, {"sg-2", "red", "A", "X-Key"}, {"sg-3", "default", "B", ""}} {
		g, err := st.GetSecretGrant(ctx, want.id)
		if err != nil || g.Project != want.project || g.Secret != want.secret || (want.header != "" && (len(g.Headers) != 1 || g.Headers[0] != want.header)) {
			t.Errorf("grant %s: %+v %v", want.id, g, err)
		}
	}
	if active, err := st.ActiveSecretGrants(ctx, "sb-red", now); err != nil || len(active) != 1 || active[0].Placeholder != "ph" {
		t.Errorf("sb-red's grants in force: %+v %v", active, err)
	}
	// Deleting red's copy takes red's grant only.
	if err := st.DeleteSecret(ctx, "red", "A"); err != nil {
		t.Fatal(err)
	}
	if l, _ := st.ListSecretGrants(ctx, "", ""); len(l) != 2 {
		t.Errorf("after deleting red's A: %d grants, want 2", len(l))
	}

	l, err := audit.Open(ctx, audit.Config{Store: st, Redactor: nopRedactor{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ctx, audit.Entry{SandboxID: "sb-red", Kind: "exec.end"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ctx, audit.Entry{SandboxID: "sb-def", Kind: "exec.end"}); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(ctx, st, nil)
	if err != nil || !rep.OK() || rep.Events != 9 || rep.Blobs != 1 {
		t.Fatalf("the chain after the upgrade: %v %v", rep, err)
	}
	// The old events are read as their sandbox's project's, the blob
	// one refers to too; the ones naming none are the operator's only.
	reviewer := func(p string) context.Context {
		return tenant.With(ctx, tenant.Principal{Project: p, Role: tenant.Reviewer})
	}
	if b, err := l.Blob(reviewer("default"), blob); err != nil || len(b) != len(data) {
		t.Errorf("default's reviewer reads its old blob: %d bytes, %v", len(b), err)
	}
	if _, err := l.Blob(reviewer("red"), blob); err == nil {
		t.Error("red's reviewer reads default's old blob")
	}
	for project, want := range map[string]int{"red": 3, "default": 4} {
		evs, err := l.Query(reviewer(project), store.AuditFilter{})
		if err != nil || len(evs) != want {
			t.Errorf("%s's reviewer reads %d events, want %d: %v", project, len(evs), want, err)
		}
	}
}

// Attack: a grant of a secret only another project holds, and a row
// claiming another project than its sandbox's; both are refused.
func TestSecretGrantIsOfItsSandboxsProject(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	if err := st.PutProject(ctx, &store.Project{ID: "red", Created: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSandbox(ctx, &store.Sandbox{ID: "sb-def", State: "running", Created: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSecret(ctx, &store.Secret{Project: "red", Name: "X", Sealed: []byte{1}, Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	g := &store.SecretGrant{ID: "sg-1", Secret: "X", SandboxID: "sb-def", Mode: "env", Env: "X", Hosts: []string{"a.test"}, Created: now, Expires: now.Add(time.Hour)}
	if err := st.PutSecretGrant(ctx, g); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a grant of red's secret to default's sandbox: %v", err)
	}
	err = store.ExecRaw(st, `INSERT INTO secret_grants (id, project, secret, sandbox_id, task_id, mode, env, hosts, placeholder, created, expires, created_by)
		VALUES ('sg-2', 'red', 'X', 'sb-def', '', 'env', 'X', '[]', '', 1, 2, 'x')`)
	if err == nil || !strings.Contains(err.Error(), "sandbox's project") {
		t.Errorf("a grant row of red's for default's sandbox: %v", err)
	}
	if err := st.PutSecret(ctx, &store.Secret{Project: "ghost", Name: "X", Sealed: []byte{1}, Created: now, Updated: now}); err == nil {
		t.Error("a secret of a project that does not exist was stored")
	}
}
