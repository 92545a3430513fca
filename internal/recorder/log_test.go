package recorder

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
)

// logLines collects what a recorder logs, safely from its goroutines, and
// signals each line.
type logLines struct {
	mu    sync.Mutex
	lines []string
	added chan string
}

func newLogLines() *logLines { return &logLines{added: make(chan string, 64)} }

func (l *logLines) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
	select {
	case l.added <- s:
	default:
	}
}

// count is how many lines contain sub.
func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// waitFor waits for a line containing sub (a background write's report).
func (l *logLines) waitFor(t *testing.T, sub string) {
	t.Helper()
	if l.count(sub) > 0 {
		return
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case s := <-l.added:
			if strings.Contains(s, sub) {
				return
			}
		case <-timeout:
			t.Fatalf("nothing logged with %q; logged %q", sub, l.lines)
		}
	}
}

// openLog is an audit log on a store in a temp dir, and the database's
// path.
func openLog(t *testing.T) (*audit.Log, *store.Store, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "airlock.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: redact.New()})
	if err != nil {
		t.Fatal(err)
	}
	return l, st, db
}

// refuseKind makes the database refuse every audit event of kind, as a
// full disk refuses a write: the batch is rolled back and the log stops,
// while events of other kinds can still be written (so a stopped log can
// take its essential events and recover, without root for a real full
// disk).
func refuseKind(t *testing.T, db, kind string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TRIGGER test_refuse BEFORE INSERT ON audit_events WHEN NEW.kind = '` + kind +
		`' BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END`); err != nil {
		t.Fatal(err)
	}
}

// kinds are the kinds of the events in the log, in order.
func kinds(t *testing.T, l *audit.Log) []string {
	t.Helper()
	evs, err := l.Query(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// stoppedLog is a recorder whose log has just stopped on a refused
// exec.start; events of other kinds can still reach the database.
func stoppedLog(t *testing.T) (*Recorder, *audit.Log, *logLines) {
	t.Helper()
	l, _, db := openLog(t)
	lines := newLogLines()
	r := New(l, lines.logf)
	if err := r.Record(context.Background(), audit.Entry{Kind: "sandbox.create", SandboxID: "s-1"}); err != nil {
		t.Fatal(err)
	}
	refuseKind(t, db, "exec.start")
	if err := r.Record(context.Background(), audit.Entry{Kind: "exec.start", SandboxID: "s-1"}); err == nil {
		t.Fatal("the refused write succeeded")
	}
	if l.Err() == nil {
		t.Fatal("a failed write did not stop the log")
	}
	return r, l, lines
}

// Without an audit log every write succeeds and nothing is lost or
// logged: the recorder of a daemon that keeps none.
func TestNoLogRecordsNothingAndFailsNothing(t *testing.T) {
	lines := newLogLines()
	r := New(nil, lines.logf)
	ctx := context.Background()
	if err := r.Record(ctx, audit.Entry{Kind: "exec.start"}); err != nil {
		t.Error(err)
	}
	if err := r.RecordAs(ctx, audit.Entry{Kind: "sandbox.stop"}, true); err != nil {
		t.Error(err)
	}
	r.RecordAsync(ctx, audit.Entry{Kind: "exec.end"})
	if err := r.Healthy(); err != nil {
		t.Error(err)
	}
	r.Start(time.Millisecond)
	r.Stop()
	if r.Lost() != 0 || len(lines.lines) != 0 {
		t.Errorf("lost %d, logged %q", r.Lost(), lines.lines)
	}
}

// The actor of an event is the one it names, else the request's
// (WithActor), else "unknown": never empty on the record.
func TestRecordNamesTheActor(t *testing.T) {
	t.Parallel()
	l, _, _ := openLog(t)
	r := New(l, t.Logf)
	alice := sandbox.WithActor(context.Background(), "operator:alice")
	for _, e := range []audit.Entry{{Kind: "a"}, {Kind: "b", Actor: "daemon"}} {
		if err := r.Record(alice, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Record(context.Background(), audit.Entry{Kind: "c"}); err != nil {
		t.Fatal(err)
	}
	r.RecordAsync(sandbox.WithActor(context.Background(), "apikey:k-1"), audit.Entry{Kind: "d"})
	r.RecordAsync(alice, audit.Entry{Kind: "e", Actor: "daemon"})
	l.Flush()
	evs, err := l.Query(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range evs {
		got[e.Kind] = e.Actor
	}
	want := map[string]string{"a": "operator:alice", "b": "daemon", "c": "unknown", "d": "apikey:k-1", "e": "daemon"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("actors %v, want %v", got, want)
	}
	if r.Lost() != 0 {
		t.Errorf("lost %d", r.Lost())
	}
}

// Record before act: a write the log refuses is the caller's error (an
// ErrLimitExceeded, named by what RecordFirst says), it is not on the
// record, and from then on nothing ordinary is recorded and the core is
// told not to run anything (Healthy) until the log can write again.
func TestRecordFirstFailureStopsTheAct(t *testing.T) {
	t.Parallel()
	l, st, db := openLog(t)
	lines := newLogLines()
	r := New(l, lines.logf)
	refuseKind(t, db, "exec.start")
	ctx := context.Background()
	acted := false
	act := func() error {
		if err := RecordFirst("sandbox s-1: record exec x-1", r.Record(ctx, audit.Entry{Kind: "exec.start", SandboxID: "s-1"})); err != nil {
			return err
		}
		acted = true
		return nil
	}
	err := act()
	if err == nil || acted {
		t.Fatalf("acted without a record: %v", err)
	}
	if !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.HasPrefix(err.Error(), "sandbox s-1: record exec x-1: audit log: ") {
		t.Errorf("error %v", err)
	}
	if lines.count("AUDIT WRITE FAILED (exec.start)") != 1 {
		t.Errorf("logged %q", lines.lines)
	}
	if k := kinds(t, l); len(k) != 0 {
		t.Errorf("recorded %q", k)
	}
	// A stopped log takes nothing ordinary, of any kind.
	if err := r.Record(ctx, audit.Entry{Kind: "exec.input"}); !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Errorf("a stopped log took an event: %v", err)
	}
	// Healthy fails closed while the log cannot be written (its store is
	// gone: the retry cannot recover it).
	st.Close()
	if err := r.Healthy(); !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.Contains(err.Error(), "nothing runs until it can") {
		t.Errorf("healthy with a stopped log: %v", err)
	}
	if lines.count("audit log still stopped") != 1 {
		t.Errorf("the retry was not tried once: %q", lines.lines)
	}
	// Asked again within the second, the retry is not tried again (a
	// health check per request must not hammer a full disk).
	if err := r.Healthy(); err == nil || lines.count("audit log still stopped") != 1 {
		t.Errorf("healthy again: %v, logged %q", err, lines.lines)
	}
}

// Best effort: an event after its act that the log refuses does not fail
// the caller (RecordAsync returns nothing, BestEffort takes an error and
// returns nothing); each is logged and counted.
func TestBestEffortFailuresAreCountedNotReturned(t *testing.T) {
	t.Parallel()
	r, l, lines := stoppedLog(t)
	ctx := context.Background()
	r.RecordAsync(ctx, audit.Entry{Kind: "exec.end", SandboxID: "s-1"})
	l.Flush()
	if r.Lost() != 1 || lines.count("AUDIT WRITE FAILED (exec.end)") != 1 {
		t.Errorf("async: lost %d, logged %q", r.Lost(), lines.lines)
	}
	r.BestEffort("sandbox s-1: checkpoint output", r.Record(ctx, audit.Entry{Kind: "exec.output"}))
	if r.Lost() != 2 || lines.count("sandbox s-1: checkpoint output: audit log: ") != 1 {
		t.Errorf("best effort: lost %d, logged %q", r.Lost(), lines.lines)
	}
	if k := kinds(t, l); !slices.Equal(k, []string{"sandbox.create"}) {
		t.Errorf("recorded %q", k)
	}
}

// The essential events (a sandbox's stop, the daemon's; any the caller
// marks so) reach a stopped log, after an audit.outage event saying so;
// the log stays stopped for everything else.
func TestEssentialEventsReachAStoppedLog(t *testing.T) {
	t.Parallel()
	r, l, _ := stoppedLog(t)
	ctx := context.Background()
	for _, e := range []struct {
		kind      string
		essential bool
	}{{"sandbox.stop", false}, {"daemon.stop", false}, {"task.finish", true}} {
		if err := r.RecordAs(ctx, audit.Entry{Kind: e.kind, Actor: "daemon"}, e.essential); err != nil {
			t.Errorf("essential %s: %v", e.kind, err)
		}
	}
	if err := r.RecordAs(ctx, audit.Entry{Kind: "task.start", Actor: "daemon"}, false); !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Errorf("an ordinary event reached a stopped log: %v", err)
	}
	want := []string{"sandbox.create", "audit.outage", "sandbox.stop", "daemon.stop", "task.finish"}
	if k := kinds(t, l); !slices.Equal(k, want) {
		t.Errorf("recorded %q, want %q", k, want)
	}
	if l.Err() == nil {
		t.Error("essential writes restarted the log")
	}
}

// Healthy restarts a stopped log that can be written again: the outage
// is put on the record and events are taken again, without a restart.
func TestHealthyRecoversTheLog(t *testing.T) {
	t.Parallel()
	r, l, lines := stoppedLog(t)
	if err := r.Healthy(); err != nil {
		t.Fatalf("healthy after the disk came back: %v", err)
	}
	if lines.count("audit log running again") != 1 {
		t.Errorf("logged %q", lines.lines)
	}
	if err := r.Record(context.Background(), audit.Entry{Kind: "exec.input"}); err != nil {
		t.Errorf("after recovery: %v", err)
	}
	if k := kinds(t, l); !slices.Equal(k, []string{"sandbox.create", "audit.recovered", "exec.input"}) {
		t.Errorf("recorded %q", k)
	}
}

// Start retries a stopped log in the background, with nothing asking.
func TestStartRecoversInTheBackground(t *testing.T) {
	t.Parallel()
	r, l, lines := stoppedLog(t)
	r.Start(time.Millisecond)
	defer r.Stop()
	lines.waitFor(t, "audit log running again")
	if err := l.Err(); err != nil {
		t.Errorf("still stopped: %v", err)
	}
	r.Stop()
}
