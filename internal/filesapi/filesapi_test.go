package filesapi

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// The file API's tests run on the fake backend (runtime/fake): no root,
// milliseconds per sandbox.

// newRig is a manager on the fake backend, with a fresh store and audit
// log, and the file API attached.
func newRig(t *testing.T) (*manager.Manager, *audit.Log, *API) {
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
	api := New()
	m, err := manager.New(context.Background(), manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st,
		Audit: log, Redactor: red, Logf: t.Logf, Modules: []hook.Module{api}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m, log, api
}

// eventsOf returns a sandbox's audit events of one kind ("": all).
func eventsOf(t *testing.T, log *audit.Log, id, kind string) []*audit.Event {
	t.Helper()
	evs, err := log.Query(context.Background(), store.AuditFilter{SandboxID: id})
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

// kindsOf returns the kinds of a sandbox's audit events, in order.
func kindsOf(t *testing.T, log *audit.Log, id string) []string {
	t.Helper()
	var kinds []string
	for _, e := range eventsOf(t, log, id, "") {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// The policed file API: each operation judged on the clean path, writes
// recorded before and after, a refused one recorded and not done; tar
// in and out.
func TestAgentFiles(t *testing.T) {
	ctx := context.Background()
	m, log, api := newRig(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := api.AgentFiles(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.WriteFile(ctx, "workspace/rel.txt", strings.NewReader("x"), 0o644, false); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("relative path: %v, want invalid", err)
	}
	if err := fs.Mkdir(ctx, "/tmp/../workspace/d/e", true); err != nil {
		t.Fatal(err)
	}
	if n, err := fs.WriteFile(ctx, "/workspace/d/e/f.txt", strings.NewReader("content\n"), 0o644, false); err != nil || n != 8 {
		t.Fatalf("write: %d %v", n, err)
	}
	var buf bytes.Buffer
	if n, err := fs.ReadFile(ctx, "/workspace/d/e/f.txt", &buf, 1<<20); err != nil || n != 8 || buf.String() != "content\n" {
		t.Errorf("read: %d %q %v", n, buf.String(), err)
	}
	// a secret file, put there by the daemon's own (unpoliced) access
	raw, err := api.c.Files(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.WriteFile(ctx, "/workspace/d/e/.env", strings.NewReader("TOKEN=x\n"), 0o600, false); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadFile(ctx, "/workspace/d/e/.env", io.Discard, 1<<20); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("read of a secret file: %v, want denied", err)
	}
	buf.Reset()
	_, err = fs.Tar(ctx, "/workspace/d", &buf)
	var omitted *OmittedError
	if !errors.As(err, &omitted) || !slices.Equal(omitted.Paths, []string{"/workspace/d/e/.env"}) || !strings.Contains(err.Error(), "left out") {
		t.Fatalf("tar with a secret file in it: %v, want it left out", err)
	}
	var names []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.TrimPrefix(h.Name, "./"))
	}
	if !slices.Contains(names, "e/f.txt") || slices.Contains(names, "e/.env") {
		t.Errorf("tar of /workspace/d: %q, want e/f.txt and not e/.env", names)
	}
	var up bytes.Buffer
	tw := tar.NewWriter(&up)
	_ = tw.WriteHeader(&tar.Header{Name: "up.txt", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("up\n"))
	_ = tw.Close()
	if err := fs.Mkdir(ctx, "/workspace/u", false); err != nil {
		t.Fatal(err)
	}
	if err := fs.Untar(ctx, "/workspace/u", bytes.NewReader(up.Bytes())); err != nil {
		t.Fatalf("untar: %v", err)
	}
	var evil bytes.Buffer
	tw = tar.NewWriter(&evil)
	_ = tw.WriteHeader(&tar.Header{Name: "../escape.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	if err := fs.Untar(ctx, "/workspace/u", bytes.NewReader(evil.Bytes())); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("untar of an entry above its directory: %v, want invalid", err)
	}
	var out bytes.Buffer
	if _, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"cat", "u/up.txt", "d/e/f.txt"}}, nil, &out, nil); err != nil || st.Code != 0 || out.String() != "up\ncontent\n" {
		t.Errorf("the files as a command sees them: %q %+v %v", out.String(), st, err)
	}
	if err := fs.Remove(ctx, "/workspace/d", true); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadFile(ctx, "/workspace/d/e/f.txt", io.Discard, 1<<20); err == nil {
		t.Error("read after remove succeeded")
	}
	writes := eventsOf(t, log, sb.ID, "file.write")
	var states []string
	for _, e := range writes {
		var p struct {
			State, Path string
		}
		_ = json.Unmarshal(e.Payload, &p)
		states = append(states, p.State+" "+p.Path)
	}
	if !slices.Equal(states, []string{"started /workspace/d/e/f.txt", "done /workspace/d/e/f.txt"}) {
		t.Errorf("file.write events: %q", states)
	}
	if n := len(eventsOf(t, log, sb.ID, "file.refused")); n != 2 {
		t.Errorf("%d file.refused events, want 2 (the read, the entry left out)", n)
	}
	kinds := kindsOf(t, log, sb.ID)
	for _, want := range []string{"file.mkdir", "file.remove"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("events %q lack %s", kinds, want)
		}
	}
}

// A sandbox whose policy denies writes: the file API refuses them and
// records the refusal; reads still work.
func TestAgentFilesRefused(t *testing.T) {
	ctx := context.Background()
	m, log, api := newRig(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{Policy: &policy.Layer{Classes: map[policy.Class]policy.Action{policy.Write: policy.Deny}}})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := api.AgentFiles(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.WriteFile(ctx, "/workspace/no.txt", strings.NewReader("x"), 0o644, false); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("write under a deny: %v, want denied", err)
	}
	if err := fs.Mkdir(ctx, "/workspace/nodir", false); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("mkdir under a deny: %v, want denied", err)
	}
	if err := fs.Untar(ctx, "/workspace", bytes.NewReader(nil)); err != nil && !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("empty untar: %v", err)
	}
	raw, err := api.c.Files(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ReadFile(ctx, "/workspace/no.txt", io.Discard, 10); err == nil {
		t.Error("the refused write happened")
	}
	if n := len(eventsOf(t, log, sb.ID, "file.refused")); n < 2 {
		t.Errorf("%d file.refused events, want one per refusal", n)
	}
	if n := len(eventsOf(t, log, sb.ID, "file.write")); n != 0 {
		t.Errorf("%d file.write events for a refused write", n)
	}
}

// A sandbox that is not running has no file API (the core's errors: a
// stopped one is a conflict that says so, an unknown one not found), and
// an unattached module refuses every call.
func TestAgentFilesNotRunning(t *testing.T) {
	ctx := context.Background()
	m, _, api := newRig(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := api.AgentFiles(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("on a stopped sandbox: %v, want a conflict that says stopped", err)
	}
	if _, err := api.AgentFiles(ctx, "sb-nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("on an unknown sandbox: %v, want not found", err)
	}
	if _, err := New().AgentFiles(ctx, sb.ID); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("unattached: %v, want unsupported", err)
	}
}

// While a task is being finished nothing writes its sandbox's files;
// reads go on, and writes again once it is running.
func TestAgentFilesFinishing(t *testing.T) {
	ctx := context.Background()
	_, _, api := newRig(t)
	sb, err := api.c.CreateForTask(ctx, sandbox.CreateRequest{}, "t-42")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := api.AgentFiles(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	end, err := api.c.BeginFinishing(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.WriteFile(ctx, "/workspace/late", strings.NewReader("x"), 0o644, false); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "t-42") {
		t.Errorf("write while finishing: %v, want a conflict naming the task", err)
	}
	if _, err := fs.Stat(ctx, "/workspace"); err != nil {
		t.Errorf("stat while finishing: %v", err)
	}
	end()
	if _, err := fs.WriteFile(ctx, "/workspace/late", strings.NewReader("x"), 0o644, false); err != nil {
		t.Errorf("write once running again: %v", err)
	}
}
