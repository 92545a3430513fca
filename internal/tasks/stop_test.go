package tasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// Diff copies and temporary files of a killed daemon are removed at the
// next start; a task's clone, result and kept diff stay.
func TestStartRemovesAKilledDaemonsDiffCopies(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "tasks", "t-0123456789ab")
	left := []string{filepath.Join(task, "work-123", "tree", "src", "big.bin"), filepath.Join(task, "stopped-diff-99.tmp")}
	kept := []string{filepath.Join(task, "base", "README"), filepath.Join(task, "result", "patch.diff"), filepath.Join(task, keptDiffName)}
	for _, p := range append(left, kept...) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := manager.New(context.Background(), manager.Config{Backend: fakeBackend{}, Templates: tpls, Store: st,
		Modules: []hook.Module{New(Config{Dir: filepath.Join(dir, "tasks")})}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(task, "work-123"), left[1]} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left on disk: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}
