package snapshots

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// noBackend creates nothing: for tests of what the manager does alone.
type noBackend struct{}

func (noBackend) Name() string                       { return "none" }
func (noBackend) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }
func (noBackend) Create(context.Context, runtime.Spec) (runtime.Sandbox, error) {
	return nil, errors.New("noBackend creates no sandboxes")
}

// Seeds that snapshots of a killed daemon were writing stayed on disk
// for good (found in a lifecycle review): the next start removes them,
// and the dirs they alone were in, and keeps finished snapshots.
func TestNewRemovesSeedsOfAKilledDaemon(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	snaps := filepath.Join(dir, "snapshots")
	files := map[string]bool{ // path under snaps -> kept
		"new/.seed-123":                  false,
		"old/.seed-456":                  false,
		"old/.current.tmp":               false,
		"old/current":                    true,
		"old/0123456789ab/seed.tar":      true,
		"old/0123456789ab/snapshot.json": true,
		"old/ba9876543210/seed.tar":      false, // its snapshot.json never written
	}
	for f := range files {
		p := filepath.Join(snaps, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := manager.New(context.Background(), manager.Config{Backend: noBackend{}, Templates: tpls, Store: st,
		Modules: []hook.Module{New(snaps, tpls)}}); err != nil {
		t.Fatal(err)
	}
	for f, kept := range files {
		if _, err := os.Stat(filepath.Join(snaps, f)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", f, err == nil, kept)
		}
	}
	if _, err := os.Stat(filepath.Join(snaps, "new")); err == nil {
		t.Error("the dir of a snapshot that never finished was kept")
	}
}
