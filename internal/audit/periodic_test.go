package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/store"
)

// waitAnchor waits until the checkpoint at path names at least seq.
func waitAnchor(t *testing.T, l *Log, path string, seq int64) *Anchor {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := ReadAnchor(path, l.PublicKey())
		if err == nil && a.Seq >= seq {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint naming event %d or later: %v %v", seq, a, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A daemon that runs long, or dies, left every event after its start
// checkpoint unanchored: a tail cut went unnoticed (issue 17). With
// checkpoints every N events, only the events after the latest one can
// go unnoticed.
func TestPeriodicCheckpointCatchesATailCut(t *testing.T) {
	ctx := context.Background()
	l, st, db := openLog(t, maskRedactor{})
	path := filepath.Join(t.TempDir(), "head.json")
	if _, err := l.Checkpoint(path); err != nil { // the start checkpoint
		t.Fatal(err)
	}
	stop, err := l.StartCheckpoints(path, 50, time.Hour, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	record(t, l, 180)
	// In the end fewer than 50 events are unanchored. (Not "an anchor at
	// 150 or later": under load a checkpoint may come sooner than every
	// 50, and the last one then at 148, say, with 36 events after it.)
	head, _ := l.Head()
	a := waitAnchor(t, l, path, head-49)
	cps, err := st.AuditEvents(ctx, store.AuditFilter{Kind: CheckpointKind})
	// At least one periodic one: a checkpointer that lags under load
	// covers more than 50 events at once, so 180 events may make as few
	// as one (the anchor wait above is what bounds the unanchored tail).
	if err != nil || len(cps) < 2 {
		t.Fatalf("want the start and a periodic checkpoint on record, got %d (%v)", len(cps), err)
	}
	stop() // the daemon dies: no stop checkpoint
	if r, err := VerifyCheckpointed(ctx, st, path, l.PublicKey()); err != nil || !r.OK() {
		t.Fatalf("untouched: %v %v", r, err)
	}
	tamper(t, db, fmt.Sprintf(`DELETE FROM audit_events WHERE seq > %d`, a.Seq-40))
	r, err := VerifyCheckpointed(ctx, st, path, l.PublicKey())
	if err != nil || r.OK() || !strings.Contains(r.String(), "truncated") {
		t.Fatalf("a tail cut behind a periodic checkpoint: %v %v", r, err)
	}
}

// The interval signs a short tail too, and an idle log is not signed
// again and again (each checkpoint is an event itself).
func TestPeriodicCheckpointInterval(t *testing.T) {
	ctx := context.Background()
	l, st, _ := openLog(t, maskRedactor{})
	path := filepath.Join(t.TempDir(), "head.json")
	stop, err := l.StartCheckpoints(path, 1000, 50*time.Millisecond, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	record(t, l, 3)
	waitAnchor(t, l, path, 4) // the 3 events and a checkpoint's own
	count := func() int {
		cps, err := st.AuditEvents(ctx, store.AuditFilter{Kind: CheckpointKind})
		if err != nil {
			t.Fatal(err)
		}
		return len(cps)
	}
	before := count()
	time.Sleep(300 * time.Millisecond)
	if after := count(); after != before {
		t.Fatalf("an idle log was signed again: %d checkpoints, then %d", before, after)
	}
	for _, bad := range []struct {
		n int
		d time.Duration
	}{{0, time.Second}, {MaxCheckpointEvents + 1, time.Second}, {10, 0}, {10, MaxCheckpointInterval + time.Second}} {
		if _, err := l.StartCheckpoints(path, bad.n, bad.d, nil); err == nil {
			t.Errorf("unbounded periodic checkpoint %d/%s accepted", bad.n, bad.d)
		}
	}
}

// A checkpoint file put back to an older one (the log left as it is, or
// rewritten after the old head) is noticed: the log records the later
// checkpoints. One checkpoint newer than the file is a crash between its
// event and its file, not a rollback.
func TestRolledBackCheckpointIsNoticed(t *testing.T) {
	ctx := context.Background()
	l, st, _ := openLog(t, maskRedactor{})
	path := filepath.Join(t.TempDir(), "head.json")
	record(t, l, 2)
	if _, err := l.Checkpoint(path); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	record(t, l, 2)
	if _, err := l.Record(ctx, Entry{Kind: CheckpointKind, Payload: map[string]any{"file": filepath.Base(path)}}); err != nil {
		t.Fatal(err) // a checkpoint whose file was never written
	}
	if r, err := VerifyCheckpointed(ctx, st, path, l.PublicKey()); err != nil || !r.OK() {
		t.Fatalf("a crash between a checkpoint's event and its file: %v %v", r, err)
	}
	if err := CheckStart(ctx, l, st, path); err != nil {
		t.Fatalf("start check after such a crash: %v", err)
	}
	if _, err := l.Checkpoint(path); err != nil {
		t.Fatal(err)
	}
	record(t, l, 2)
	os.WriteFile(path, old, 0o600)
	if r, err := VerifyCheckpointed(ctx, st, path, l.PublicKey()); err != nil || r.OK() || !strings.Contains(r.String(), "replaced by an older one") {
		t.Fatalf("a rolled-back checkpoint: %v %v", r, err)
	}
	if err := CheckStart(ctx, l, st, path); err == nil || !strings.Contains(err.Error(), "older one") {
		t.Fatalf("start check, rolled back: %v", err)
	}
}
