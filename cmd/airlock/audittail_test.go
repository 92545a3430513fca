package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A daemon that runs long and then dies left every event after its start
// checkpoint unanchored: someone with the database could cut that tail,
// and `audit verify` said ok (issue 17). With a checkpoint every N events
// the cut shows, unless it stays within the last N.
func TestServePeriodicCheckpointCatchesATailCut(t *testing.T) {
	e := newEnv(t)
	keyFile := filepath.Join(t.TempDir(), "elsewhere", "signing.key")
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	d := e.startDaemon(t, "--audit-checkpoint-events", "20", "--audit-checkpoint-interval", "1h", "--audit-key", keyFile)
	for i := 0; i < 60; i++ {
		if code, body := d.post(t, "/v1/apikeys", fmt.Sprintf(`{"name":"k%d"}`, i)); code != 201 {
			t.Fatalf("apikey create: %d %s", code, body)
		}
	}
	cp := filepath.Join(e.data, "audit-head.json")
	var seq int64
	waitUntil(t, "a periodic checkpoint past event 50", func() bool {
		var a struct{ Seq int64 }
		b, err := os.ReadFile(cp)
		if err == nil && json.Unmarshal(b, &a) == nil {
			seq = a.Seq
		}
		return seq >= 50
	})
	_ = d.cmd.Process.Signal(syscall.SIGKILL) // no stop checkpoint
	_ = d.cmd.Wait()
	if _, err := os.Stat(filepath.Join(e.data, "audit.key")); err == nil {
		t.Error("--audit-key given, yet a key was made next to the database")
	}
	db := filepath.Join(e.data, "airlock.db")
	if out, errOut, code := e.run("", "audit", "verify", "--db", db, "--key-file", keyFile); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("untouched: %d %q %q", code, out, errOut)
	}
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"DROP TRIGGER audit_no_delete", fmt.Sprintf("DELETE FROM audit_events WHERE seq > %d", seq-15)} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	if out, _, code := e.run("", "audit", "verify", "--db", db, "--key-file", keyFile); code != 1 || !strings.Contains(out, "truncated") {
		t.Fatalf("a tail cut behind a periodic checkpoint: %d %q", code, out)
	}
}
