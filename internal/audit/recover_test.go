package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/store"
	"golang.org/x/sys/unix"
)

// fullDisk mounts a tmpfs of size bytes for a log's database, and returns
// fill (write until the disk is full) and free (remove what fill wrote).
func fullDisk(t *testing.T, size int64) (dir string, fill, free func()) {
	t.Helper()
	dir = t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	fill = func() {
		f, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, unix.ENOSPC) {
					t.Fatal(err)
				}
				return
			}
		}
	}
	return dir, fill, func() { os.Remove(filler) }
}

// The threat model's "fill the log disk", to its end: the log stops (fail
// closed), a sandbox destroyed meanwhile is still on the record (the
// reserve), and once space is back the log runs again without a restart,
// with the outage on the record and the chain whole.
func TestFullDiskStopsThenRecoversWithoutRestart(t *testing.T) {
	dir, fill, free := fullDisk(t, 8<<20)
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	l, err := Open(ctx, Config{Store: st, Redactor: maskRedactor{}, ReserveFile: filepath.Join(dir, "audit.reserve"), ReserveBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	record(t, l, 3)
	fill()
	var werr error
	for i := 0; werr == nil; i++ {
		if i == 200 {
			t.Fatal("the log never failed on a full disk")
		}
		_, werr = l.Record(ctx, Entry{SandboxID: "sb1", Kind: "exec.end", Payload: map[string]any{"stdout": Blob(strings.Repeat(fmt.Sprint(i), 50000))}})
	}
	if l.Err() == nil {
		t.Fatal("a failed write did not stop the log")
	}
	if _, err := l.Record(ctx, Entry{Kind: "exec.start"}); err == nil {
		t.Fatal("a stopped log took an event")
	}
	if err := l.Recover(ctx); err == nil || l.Err() == nil {
		t.Fatalf("recovered on a full disk: %v", err)
	}

	// Destroy on the full disk: on the record, and the log stays stopped.
	if _, err := l.RecordEssential(ctx, Entry{SandboxID: "sb1", Kind: "sandbox.stop", Payload: map[string]any{"reason": "destroyed"}}); err != nil {
		t.Fatalf("destroy on a full disk: %v", err)
	}
	if _, err := l.RecordEssential(ctx, Entry{Kind: "daemon.stop"}); err != nil {
		t.Fatalf("shutdown on a full disk: %v", err)
	}
	if l.Err() == nil {
		t.Error("the log runs again with the disk still full")
	}

	free()
	if err := l.Recover(ctx); err != nil || l.Err() != nil {
		t.Fatalf("recover once space is back: %v (%v)", err, l.Err())
	}
	if _, err := os.Stat(filepath.Join(dir, "audit.reserve")); err != nil {
		t.Errorf("the reserve is not back: %v", err)
	}
	if _, err := l.Record(ctx, Entry{Kind: "exec.start"}); err != nil {
		t.Fatalf("record after recovery: %v", err)
	}
	evs, err := l.Query(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	want := "sandbox.stop daemon.stop audit.recovered exec.start"
	if got := strings.Join(kinds, " "); !strings.Contains(got, "audit.outage "+want) {
		t.Errorf("events: %s, want ... audit.outage %s", got, want)
	}
	if rep := verify(t, st, nil); !rep.OK() {
		t.Errorf("chain after the outage: %+v", rep)
	}
}

// Recovery continues only the chain this log wrote: an event slipped into
// the database behind the daemon's back stops the log (its next write
// collides), and Recover does not chain onto it.
func TestRecoverRefusesALogChangedUnderIt(t *testing.T) {
	l, _, db := openLog(t, maskRedactor{})
	record(t, l, 3)
	tamper(t, db, `INSERT INTO audit_events (seq, time, sandbox_id, task_id, exec_id, actor, kind, payload, prev, hash)
		SELECT seq + 1, time, sandbox_id, task_id, exec_id, actor, kind, payload, hash, 'forged' FROM audit_events WHERE seq = 3`)
	if _, err := l.Record(context.Background(), Entry{Kind: "exec.start"}); err == nil {
		t.Fatal("a write over a forged event succeeded")
	}
	if err := l.Recover(context.Background()); err == nil || l.Err() == nil || !strings.Contains(err.Error(), "changed under it") {
		t.Fatalf("recovered over a forged event: %v", err)
	}
	if _, err := l.RecordEssential(context.Background(), Entry{Kind: "daemon.stop"}); err == nil {
		t.Fatal("an essential event was chained onto a forged one")
	}
}
