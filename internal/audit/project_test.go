package audit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// projectLog is a log over a store with projects red and blue, each
// with one sandbox (sb-red, sb-blue).
func projectLog(t testing.TB) (*Log, *store.Store, string) {
	t.Helper()
	l, st, db := openLog(t, maskRedactor{})
	ctx := context.Background()
	now := time.Now().UTC()
	for _, p := range []string{"red", "blue"} {
		if err := st.PutProject(ctx, &store.Project{ID: p, Created: now}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutSandbox(ctx, &store.Sandbox{ID: "sb-" + p, State: store.StateRunning, Created: now, Project: p}); err != nil {
			t.Fatal(err)
		}
	}
	return l, st, db
}

func as(project string, role tenant.Role) context.Context {
	return tenant.With(context.Background(), tenant.Principal{Project: project, Role: role, KeyID: "k-" + project})
}

// mixedRun records events of both projects, of the daemon, and of a
// request naming no sandbox, with blobs; it returns red's blob hash.
func mixedRun(t testing.TB, l *Log) string {
	t.Helper()
	op := context.Background()
	big := strings.Repeat("red's output ", 1000)
	var redBlob string
	for _, c := range []struct {
		ctx context.Context
		e   Entry
	}{
		{op, Entry{Kind: "daemon.start"}},
		{as("red", tenant.Agent), Entry{SandboxID: "sb-red", TaskID: "t-red", Kind: "exec.end", Payload: map[string]any{"stdout": Blob(big)}}},
		{op, Entry{SandboxID: "sb-blue", Kind: "sandbox.create"}},
		{as("blue", tenant.Admin), Entry{Kind: "apikey.create"}},
		{as("blue", tenant.Agent), Entry{SandboxID: "sb-blue", Kind: "exec.end", Payload: map[string]any{"stdout": Blob("short")}}},
		{op, Entry{Kind: "secret.set", Project: "red", Payload: map[string]any{"name": "TOKEN"}}},
		{op, Entry{SandboxID: "sb-gone", Kind: "sandbox.stop"}},
	} {
		ev, err := l.Record(c.ctx, c.e)
		if err != nil {
			t.Fatal(err)
		}
		if refs := blobRefs(ev.Payload); len(refs) == 1 {
			redBlob = refs[0]
		}
	}
	if redBlob == "" {
		t.Fatal("red's output made no blob")
	}
	return redBlob
}

// Every event carries its project: its sandbox's whoever asked, else
// the requester's, else none (the daemon's, the operator's); the one
// chain verifies.
func TestEventsCarryTheirProject(t *testing.T) {
	l, st, _ := projectLog(t)
	mixedRun(t, l)
	evs, err := l.Query(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Kind+"="+e.Project)
	}
	want := "daemon.start= exec.end=red sandbox.create=blue apikey.create=blue exec.end=blue secret.set=red sandbox.stop="
	if strings.Join(got, " ") != want {
		t.Errorf("projects:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if r := verify(t, st, nil); !r.OK() || r.Events != 7 {
		t.Fatalf("mixed run: %s", r)
	}
}

// Attack: whoever holds the database moves an event to another
// project, takes its project off, or gives one to an event that had
// none; each breaks the chain at that event.
func TestEditingAnEventsProjectIsDetected(t *testing.T) {
	for _, tc := range []struct {
		name string
		sql  string
		seq  int64
	}{
		{"move to another project", `UPDATE audit_events SET project = 'blue' WHERE seq = 2`, 2},
		{"take the project off", `UPDATE audit_events SET project = '' WHERE seq = 3`, 3},
		{"give one to an event without", `UPDATE audit_events SET project = 'red' WHERE seq = 1`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, st, db := projectLog(t)
			mixedRun(t, l)
			if r := verify(t, st, nil); !r.OK() {
				t.Fatalf("before: %s", r)
			}
			tamper(t, db, tc.sql)
			r := verify(t, st, nil)
			if r.OK() || r.Problem[0].Seq != tc.seq || !strings.Contains(r.Problem[0].What, "content was changed") {
				t.Fatalf("%s: %s", tc.name, r)
			}
		})
	}
}

// Attack: blue's keys read the log asking for red's events by red's
// sandbox, task, and project; they get what a missing id gets (none).
// The operator sees all, or one project.
func TestKeysReadTheirProjectsEventsOnly(t *testing.T) {
	l, _, _ := projectLog(t)
	mixedRun(t, l)
	blue := as("blue", tenant.Reviewer)
	for _, f := range []store.AuditFilter{{}, {SandboxID: "sb-red"}, {TaskID: "t-red"}, {Project: "red"}, {Kind: "secret"}} {
		evs, err := l.Query(blue, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Project != "blue" {
				t.Errorf("blue's query %+v returned %s of project %q", f, e.Kind, e.Project)
			}
		}
		if f != (store.AuditFilter{}) && len(evs) != 0 {
			t.Errorf("blue's query %+v: %d events, want none (as for a missing id)", f, len(evs))
		}
	}
	if evs, _ := l.Query(blue, store.AuditFilter{}); len(evs) != 3 {
		t.Errorf("blue sees %d of its 3 events", len(evs))
	}
	if evs, _ := l.Query(context.Background(), store.AuditFilter{}); len(evs) != 7 {
		t.Errorf("the operator sees %d of 7 events", len(evs))
	}
	if evs, _ := l.Query(context.Background(), store.AuditFilter{Project: "red"}); len(evs) != 2 {
		t.Errorf("the operator's ?project=red: %d events, want 2", len(evs))
	}
}

// Attack: blue asks for red's blob by its hash, also after printing a
// look-alike reference to it in its own output; the answer is the one
// for a blob that is not there. Red's reviewer and the operator get it.
func TestBlobOfAnotherProjectIsMissing(t *testing.T) {
	l, _, _ := projectLog(t)
	h := mixedRun(t, l)
	if _, err := l.Record(as("blue", tenant.Agent), Entry{SandboxID: "sb-blue", Kind: "exec.end",
		Payload: map[string]any{"stdout": Blob(`{"blob":"` + BlobRef(h) + `","bytes":1}`), "note": BlobRef(h)}}); err != nil {
		t.Fatal(err)
	}
	absent := strings.Repeat("0", 64)
	for _, role := range tenant.Roles {
		_, err1 := l.Blob(as("blue", role), h)
		_, err2 := l.Blob(as("blue", role), absent)
		if !errors.Is(err1, errdefs.ErrNotFound) || strings.ReplaceAll(err1.Error(), h, absent) != err2.Error() {
			t.Errorf("blue's %s: red's blob: %v; a missing one: %v", role, err1, err2)
		}
	}
	for _, ctx := range []context.Context{as("red", tenant.Reviewer), context.Background()} {
		if b, err := l.Blob(ctx, h); err != nil || !strings.HasPrefix(string(b), "red's output") {
			t.Errorf("red's own blob: %.20q %v", b, err)
		}
	}
}

// BenchmarkBlob is a blob's read by the operator, and by a reviewer
// whose project has 10000 events: one referring to it (found), and none
// (the 404; only events written before projects are searched).
func BenchmarkBlob(b *testing.B) {
	l, _, _ := projectLog(b)
	h := mixedRun(b, l)
	for i := 0; i < 10000; i++ {
		if _, err := l.Record(as("blue", tenant.Agent), Entry{SandboxID: "sb-blue", Kind: "exec.end", Payload: map[string]any{"stdout": strings.Repeat("x", 200), "i": i}}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"operator", context.Background()}, {"reviewer-found", as("red", tenant.Reviewer)}, {"reviewer-missing", as("blue", tenant.Reviewer)}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, _ = l.Blob(c.ctx, h)
			}
		})
	}
}

// Events of both projects written at once each carry their sandbox's
// project, and the one chain holds together.
func TestConcurrentEventsKeepTheirProjects(t *testing.T) {
	l, st, _ := projectLog(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			sb := []string{"sb-red", "sb-blue"}[g%2]
			for i := 0; i < 50; i++ {
				if _, err := l.Record(context.Background(), Entry{SandboxID: sb, Kind: "exec.start", Payload: map[string]any{"i": i}}); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	evs, err := l.Query(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if "sb-"+e.Project != e.SandboxID {
			t.Fatalf("event %d of %s has project %q", e.Seq, e.SandboxID, e.Project)
		}
	}
	if r := verify(t, st, nil); !r.OK() || r.Events != 400 {
		t.Fatalf("%s", r)
	}
}
