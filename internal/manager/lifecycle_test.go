package manager

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/lost"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// fakeBackend makes no sandboxes: these tests put fakeSandboxes in a
// manager's live set by hand, to watch what the manager does with them.
type fakeBackend struct{}

func (fakeBackend) Name() string                       { return "fake" }
func (fakeBackend) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }
func (fakeBackend) Create(context.Context, runtime.Spec) (runtime.Sandbox, error) {
	return nil, errors.New("the fake backend makes no sandboxes")
}

// fakeSandbox's Destroy takes a while and counts how many run at once.
type fakeSandbox struct {
	id        string
	done      chan struct{}
	once      sync.Once
	inDestroy *atomic.Int32
	maxSeen   *atomic.Int32
}

func (s *fakeSandbox) ID() string { return s.id }
func (s *fakeSandbox) Info() runtime.Info {
	return runtime.Info{ID: s.id, Backend: "fake"}
}
func (s *fakeSandbox) Exec(context.Context, runtime.ExecRequest) (runtime.Process, error) {
	return nil, errors.New("the fake sandbox runs nothing")
}
func (s *fakeSandbox) Done() <-chan struct{} { return s.done }
func (s *fakeSandbox) Destroy(context.Context) error {
	n := s.inDestroy.Add(1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	s.inDestroy.Add(-1)
	s.once.Do(func() { close(s.done) })
	return nil
}

// testManager is a manager on a fresh store (with an audit log) whose
// backend makes nothing.
func testManager(t *testing.T, dir string) (*Manager, *store.Store, *audit.Log) {
	t.Helper()
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
	m, err := New(context.Background(), Config{Backend: fakeBackend{}, Templates: tpls, Store: st, Audit: log, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	return m, st, log
}

// A daemon that dies leaves its sandboxes and their commands "running" in
// the store; the next start ends both ("lost") and records both, and the
// chain still verifies (found in a lifecycle review: the commands showed
// as running for ever, with no exec.end or sandbox.stop on record).
func TestStartEndsWhatALostDaemonRan(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	_, st, _ := testManager(t, dir)
	created := time.Now().UTC()
	for _, sb := range []*store.Sandbox{
		{ID: "sb-running", State: "running", Backend: "fake", Template: "host", Labels: map[string]string{"task": "t-000000000001"}, Created: created},
		{ID: "sb-paused", State: "paused", Backend: "fake", Template: "host", Created: created},
		{ID: "sb-stopped", State: "stopped", Backend: "fake", Template: "host", Created: created, Stopped: &created, StopReason: sandbox.StopDestroyed},
	} {
		if err := st.PutSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []*store.Exec{
		{ID: "e-1", SandboxID: "sb-running", Argv: []string{"sleep", "100"}, Started: created},
		{ID: "e-2", SandboxID: "sb-paused", Argv: []string{"make"}, Started: created},
		// left "running" by a daemon from before this reaping
		{ID: "e-4", SandboxID: "sb-stopped", Argv: []string{"make"}, Started: created},
	} {
		if err := st.PutExec(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ended := created.Add(time.Second)
	if err := st.PutExec(ctx, &store.Exec{ID: "e-3", SandboxID: "sb-running", Argv: []string{"true"}, Started: created, Ended: &ended, Status: json.RawMessage(`{"code":0}`)}); err != nil {
		t.Fatal(err)
	}
	// The next daemon (same database, its own log handle).
	st.Close()
	m2, st2, log2 := testManager(t, dir)
	for _, id := range []string{"sb-running", "sb-paused"} {
		sb, err := m2.Get(ctx, id)
		if err != nil || sb.State != "stopped" || sb.StopReason != sandbox.StopLost {
			t.Errorf("sandbox %s after the restart: %+v %v", id, sb, err)
		}
	}
	if sb, _ := m2.Get(ctx, "sb-stopped"); sb.StopReason != sandbox.StopDestroyed {
		t.Errorf("a sandbox stopped before is changed: %+v", sb)
	}
	for _, id := range []string{"e-1", "e-2", "e-4"} {
		e, err := st2.GetExec(ctx, id)
		if err != nil || e.Ended == nil || e.Error != lost.ExecError {
			t.Errorf("exec %s after the restart: %+v %v", id, e, err)
		}
	}
	if e, _ := st2.GetExec(ctx, "e-3"); e.Error != "" || string(e.Status) != `{"code":0}` {
		t.Errorf("an ended exec is changed: %+v", e)
	}
	if left, _ := st2.UnendedExecs(ctx); len(left) != 0 {
		t.Errorf("execs still running: %+v", left)
	}
	evs, err := log2.Query(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // kind+sandbox+exec -> reason
	for _, e := range evs {
		var p struct{ Reason string }
		_ = json.Unmarshal(e.Payload, &p)
		got[e.Kind+" "+e.SandboxID+" "+e.ExecID] = p.Reason
		if e.Kind == "exec.end" && e.ExecID == "e-1" && e.TaskID != "t-000000000001" {
			t.Errorf("exec.end of a task's command without its task: %+v", e)
		}
	}
	for _, k := range []string{"exec.end sb-running e-1", "exec.end sb-paused e-2", "exec.end sb-stopped e-4", "sandbox.stop sb-running ", "sandbox.stop sb-paused "} {
		if got[k] != sandbox.StopLost {
			t.Errorf("%s: reason %q, want lost (events: %v)", k, got[k], got)
		}
	}
	if len(got) != 5 {
		t.Errorf("events: %v, want the 5 above", got)
	}
	rep, err := audit.Verify(ctx, st2, nil)
	if err != nil || !rep.OK() {
		t.Errorf("chain after the restart: %v %v", rep, err)
	}
	// A third start finds nothing more to end.
	st2.Close()
	_, _, log3 := testManager(t, dir)
	if evs3, _ := log3.Query(ctx, store.AuditFilter{}); len(evs3) != len(evs) {
		t.Errorf("a clean start recorded %d more events", len(evs3)-len(evs))
	}
}

// Shutdown stops sandboxes a few at a time: each stop may take a task's
// diff (up to a minute), and one after the other they outlasted a service
// manager's stop timeout; all at once they would not be bounded at all.
func TestShutdownStopsFourAtATime(t *testing.T) {
	m, st, _ := testManager(t, t.TempDir())
	ctx := context.Background()
	var in, max atomic.Int32
	const n = 10
	for i := range n {
		id := "sb-" + string(rune('a'+i))
		rec := &store.Sandbox{ID: id, State: "running", Backend: "fake", Template: "host", Created: time.Now().UTC()}
		if err := st.PutSandbox(ctx, rec); err != nil {
			t.Fatal(err)
		}
		m.live[id] = &live{sb: &fakeSandbox{id: id, done: make(chan struct{}), inDestroy: &in, maxSeen: &max}, rec: rec}
	}
	start := time.Now()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := max.Load(); got != ShutdownParallel {
		t.Errorf("at most %d sandboxes stopped at once, want %d", got, ShutdownParallel)
	}
	if took := time.Since(start); took > n*50*time.Millisecond {
		t.Errorf("shutdown took %s: the stops did not overlap", took)
	}
	if m.LiveCount() != 0 {
		t.Errorf("%d sandboxes still live", m.LiveCount())
	}
	sbs, _ := st.ListSandboxes(ctx, "stopped")
	if len(sbs) != n {
		t.Errorf("%d of %d sandboxes recorded stopped", len(sbs), n)
	}
	for _, sb := range sbs {
		if sb.StopReason != sandbox.StopShutdown {
			t.Errorf("%s: stop reason %q", sb.ID, sb.StopReason)
		}
	}
}
