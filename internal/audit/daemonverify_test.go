package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/store"
)

// The daemon's Verify knows how far its log wrote: a tail cut behind its
// back is a problem even though what is left still chains; a clean
// verify moves the checkpoint to the head, one that finds a problem
// leaves it where it was.
func TestLogVerifyKnowsItsOwnHead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, cp := filepath.Join(dir, "airlock.db"), filepath.Join(dir, "audit-head.json")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := Open(ctx, Config{Store: st, Redactor: maskRedactor{}, KeyFile: filepath.Join(dir, "audit.key"), CheckpointFile: cp})
	if err != nil {
		t.Fatal(err)
	}
	record(t, l, 5)
	rep, err := l.Verify(ctx)
	if err != nil || !rep.OK() || rep.Head != 5 {
		t.Fatalf("before: %v %v", rep, err)
	}
	// The checkpoint is on record itself: it signs the head after it.
	head, _ := l.Head()
	a, err := ReadAnchor(cp, l.PublicKey())
	if err != nil || head <= 5 || a.Seq != head {
		t.Fatalf("the clean verify did not checkpoint the head (%d): %+v %v", head, a, err)
	}
	record(t, l, 3)
	tamper(t, db, fmt.Sprintf(`DELETE FROM audit_events WHERE seq > %d`, head+1))
	rep, err = l.Verify(ctx)
	if err != nil || rep.OK() || !strings.Contains(rep.String(), fmt.Sprintf("this daemon wrote up to event %d", head+3)) {
		t.Fatalf("a cut tail: %v %v", rep, err)
	}
	if a, err := ReadAnchor(cp, l.PublicKey()); err != nil || a.Seq != head {
		t.Errorf("a verify that found a problem moved the checkpoint: %+v %v", a, err)
	}
}

// Without a checkpoint file the chain is verified from its start.
func TestLogVerifyWithoutCheckpoint(t *testing.T) {
	l, _, db := openLog(t, maskRedactor{})
	record(t, l, 3)
	rep, err := l.Verify(context.Background())
	if err != nil || !rep.OK() || rep.Events != 3 {
		t.Fatalf("%v %v", rep, err)
	}
	tamper(t, db, `UPDATE audit_events SET payload = '{}' WHERE seq = 2`)
	if rep, err := l.Verify(context.Background()); err != nil || rep.OK() {
		t.Fatalf("an edited event: %v %v", rep, err)
	}
}
