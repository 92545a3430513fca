package records

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// newRig is a manager on the fake backend (no root) with a fresh store
// and the module attached.
func newRig(t *testing.T) (*manager.Manager, *Records, *redact.Redactor) {
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
	r := New()
	m, err := manager.New(context.Background(), manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st,
		Redactor: red, Logf: t.Logf, Modules: []hook.Module{r}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m, r, red
}

// An exec's record and output read back, shown redacted (a secret
// learned after the record was written is hidden too); another
// sandbox's exec, an unknown one and an unknown sandbox are not found;
// an unattached module refuses every read.
func TestRecords(t *testing.T) {
	ctx := context.Background()
	m, r, red := newRig(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	execID, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"echo", "later-secret-value"}}, nil, &out, nil)
	if err != nil || st.Code != 0 {
		t.Fatalf("exec: %+v %v", st, err)
	}
	red.Add("later-secret-value")
	list, err := r.Execs(ctx, sb.ID)
	if err != nil || len(list) != 1 || list[0].ID != execID || list[0].Status == nil || list[0].Policy == nil {
		t.Fatalf("execs: %+v %v", list, err)
	}
	if list[0].Argv[1] == "later-secret-value" {
		t.Errorf("argv %q: the secret learned since is shown", list[0].Argv)
	}
	e, err := r.GetExec(ctx, sb.ID, execID)
	if err != nil || e.ID != execID || e.Argv[1] != list[0].Argv[1] {
		t.Errorf("get: %+v %v", e, err)
	}
	b, err := r.Output(ctx, sb.ID, execID, "stdout")
	if err != nil || string(b) != "later-secret-value\n" {
		t.Errorf("output %q %v: as it was stored", b, err)
	}
	for what, err := range map[string]error{
		"another sandbox's exec":     second(r.GetExec(ctx, other.ID, execID)),
		"another sandbox's output":   second(r.Output(ctx, other.ID, execID, "stdout")),
		"an unknown exec":            second(r.GetExec(ctx, sb.ID, "e-nope")),
		"an unknown sandbox's execs": second(r.Execs(ctx, "sb-nope")),
		"an unknown exec's output":   second(r.Output(ctx, sb.ID, "e-nope", "stdout")),
	} {
		if !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("%s: %v, want not found", what, err)
		}
	}
	if l, err := r.Execs(ctx, other.ID); err != nil || len(l) != 0 {
		t.Errorf("a sandbox with no execs: %+v %v", l, err)
	}
	j, err := r.RedactedJSON(map[string]string{"note": "it was later-secret-value"})
	if err != nil || bytes.Contains(j, []byte("later-secret-value")) || !bytes.Contains(j, []byte("it was ")) {
		t.Errorf("RedactedJSON: %s %v", j, err)
	}
	if _, err := r.RedactedJSON(func() {}); err == nil {
		t.Error("RedactedJSON of what JSON cannot carry")
	}
	un := New()
	for what, err := range map[string]error{
		"execs":  second(un.Execs(ctx, sb.ID)),
		"get":    second(un.GetExec(ctx, sb.ID, execID)),
		"output": second(un.Output(ctx, sb.ID, execID, "stdout")),
		"json":   second(un.RedactedJSON(nil)),
	} {
		if !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("unattached %s: %v, want unsupported", what, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
