package apikeys

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// attached is the module attached to a manager on the fake backend (no
// root), with its store, audit log and redactor.
func attached(t *testing.T) (*Keys, *audit.Log, *redact.Redactor) {
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
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	k := New()
	m, err := manager.New(context.Background(), manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log,
		Redactor: red, Logf: t.Logf, Modules: []hook.Module{k}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return k, log, red
}

// Keys of both formats: shown once, found by the key, listed without
// it, revoked; the key is learned as a secret and never on the record.
func TestKeysLife(t *testing.T) {
	ctx := context.Background()
	k, log, red := attached(t)
	a, akey, err := k.Create(ctx, "agent", "")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^ak_[0-9a-f]{32}$`).MatchString(akey) || a.Name != "agent" || !strings.HasPrefix(a.ID, "k-") {
		t.Errorf("airlock key %q %+v", akey, a)
	}
	e, ekey, err := k.Create(ctx, "sdk", "e2b")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^e2b_[0-9a-f]{40}$`).MatchString(ekey) {
		t.Errorf("e2b key %q", ekey)
	}
	if got, ok := k.Of(ctx, akey); !ok || got.ID != a.ID {
		t.Errorf("Of(airlock key): %+v %v", got, ok)
	}
	if got, ok := k.Of(ctx, ekey); !ok || got.ID != e.ID {
		t.Errorf("Of(e2b key): %+v %v", got, ok)
	}
	for _, bad := range []string{"", akey[:len(akey)-1] + "x", "zz" + akey, "ak_" + strings.Repeat("0", 300), strings.TrimPrefix(akey, KeyPrefix)} {
		if _, ok := k.Of(ctx, bad); ok {
			t.Errorf("Of(%q) is valid", bad)
		}
	}
	list, err := k.List(ctx)
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != e.ID {
		t.Errorf("list: %+v %v", list, err)
	}
	if s := red.String("key " + akey); strings.Contains(s, akey) {
		t.Errorf("the redactor does not know the key: %q", s)
	}
	if err := k.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.Of(ctx, akey); ok {
		t.Error("a revoked key is still valid")
	}
	if err := k.Delete(ctx, a.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("delete twice: %v, want not found", err)
	}
	evs, err := log.Query(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, ev := range evs {
		kinds[ev.Kind]++
		if bytes.Contains(ev.Payload, []byte(akey)) || bytes.Contains(ev.Payload, []byte(ekey)) {
			t.Errorf("%s holds a key: %s", ev.Kind, ev.Payload)
		}
	}
	if kinds["apikey.create"] != 2 || kinds["apikey.delete"] != 1 {
		t.Errorf("audit kinds %v: want 2 apikey.create, 1 apikey.delete", kinds)
	}
}

// What is not a name or a format is refused, and nothing is stored.
func TestKeysInvalid(t *testing.T) {
	ctx := context.Background()
	k, _, _ := attached(t)
	for _, tc := range []struct{ name, format string }{
		{strings.Repeat("n", 101), ""}, {"two\nlines", ""}, {"nul\x00", ""}, {"ok", "github"},
	} {
		if _, _, err := k.Create(ctx, tc.name, tc.format); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Create(%q, %q): %v, want invalid", tc.name, tc.format, err)
		}
	}
	if list, err := k.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("after refusals: %+v %v", list, err)
	}
}

// A module never attached fails closed: nothing is made, no key is valid.
func TestKeysNotAttached(t *testing.T) {
	ctx := context.Background()
	k := New()
	if k.Name() != "apikeys" {
		t.Errorf("name %q", k.Name())
	}
	if _, _, err := k.Create(ctx, "x", ""); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("create: %v", err)
	}
	if _, err := k.List(ctx); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("list: %v", err)
	}
	if err := k.Delete(ctx, "k-1"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("delete: %v", err)
	}
	if _, ok := k.Of(ctx, KeyPrefix+strings.Repeat("0", 32)); ok {
		t.Error("a key is valid on a module never attached")
	}
}
