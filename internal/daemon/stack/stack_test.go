package stack

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

func config(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	return Config{Config: manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Logf: t.Logf},
		TaskDir: filepath.Join(dir, "tasks"), SnapshotDir: filepath.Join(dir, "snapshots"), SecretsKey: filepath.Join(dir, "secrets.key")}
}

// TestNew: every module is made and attached, the manager runs a
// sandbox, and the modules answer (secrets with the key file given).
func TestNew(t *testing.T) {
	s, err := New(context.Background(), config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Manager.Shutdown(context.Background()) })
	if s.Manager == nil || s.Tasks == nil || s.Network == nil || s.Keys == nil || s.Snapshots == nil || s.Secrets == nil || s.Approvals == nil || s.Review == nil {
		t.Fatalf("a module is missing: %+v", s)
	}
	ctx := context.Background()
	sb, err := s.Manager.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Manager.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Secrets.Set(ctx, "", "K", []byte("v")); err != nil {
		t.Errorf("secrets with a key file: %v", err)
	}
	if _, _, err := s.Keys.Create(ctx, "k", ""); err != nil {
		t.Errorf("API keys: %v", err)
	}
}

// TestNewRefusesModules: the modules are the stack's; one more from the
// caller is an error, not an addition in some order.
func TestNewRefusesModules(t *testing.T) {
	cfg := config(t)
	cfg.Modules = []hook.Module{apikeys.New()}
	if _, err := New(context.Background(), cfg); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("err = %v, want invalid", err)
	}
}
