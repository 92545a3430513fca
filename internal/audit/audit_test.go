package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/store"
	_ "modernc.org/sqlite"
)

// maskRedactor hides one known value, like the real redactor would.
type maskRedactor struct{ secret string }

func (m maskRedactor) Redact(b []byte) ([]byte, bool) {
	if m.secret == "" || !bytes.Contains(b, []byte(m.secret)) {
		return b, false
	}
	return bytes.ReplaceAll(b, []byte(m.secret), []byte("[REDACTED:known-secret]")), true
}
func (m maskRedactor) JSON(doc []byte) []byte { b, _ := m.Redact(doc); return b }

func openLog(t testing.TB, red Redactor) (*Log, *store.Store, string) {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "airlock.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := Open(context.Background(), Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	return l, st, db
}

func record(t testing.TB, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := l.Record(context.Background(), Entry{SandboxID: "sb1", Kind: "exec.end", Actor: "operator",
			Payload: map[string]any{"i": i, "argv": []string{"echo", fmt.Sprint(i)}, "stdout": Blob(strings.Repeat(fmt.Sprint(i), 5000))}}); err != nil {
			t.Fatal(err)
		}
	}
}

func verify(t *testing.T, st *store.Store, a *Anchor) *Report {
	t.Helper()
	r, err := Verify(context.Background(), st, a)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tamper changes the database behind the daemon's back, as someone with
// the file would: triggers dropped first.
func tamper(t *testing.T, db string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range append([]string{"DROP TRIGGER IF EXISTS audit_no_update", "DROP TRIGGER IF EXISTS audit_no_delete"}, stmts...) {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestChainVerifies(t *testing.T) {
	l, st, _ := openLog(t, maskRedactor{})
	record(t, l, 20)
	r := verify(t, st, nil)
	if !r.OK() || r.Events != 20 || r.Head != 20 || r.Blobs != 20 {
		t.Fatalf("%s", r)
	}
	// Reopening continues the same chain.
	l2, err := Open(context.Background(), Config{Store: st, Redactor: maskRedactor{}})
	if err != nil {
		t.Fatal(err)
	}
	record(t, l2, 3)
	if r := verify(t, st, nil); !r.OK() || r.Events != 23 {
		t.Fatalf("after reopen: %s", r)
	}
}

func TestVerifyFindsTampering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sql   []string
		want  string
		first int64
	}{
		{"edit payload", []string{`UPDATE audit_events SET payload = replace(payload, '"i":4', '"i":5') WHERE seq = 5`}, "content was changed", 5},
		{"edit actor", []string{`UPDATE audit_events SET actor = 'alice' WHERE seq = 7`}, "content was changed", 7},
		{"edit time", []string{`UPDATE audit_events SET time = time + 1 WHERE seq = 3`}, "content was changed", 3},
		{"delete", []string{`DELETE FROM audit_events WHERE seq = 6`}, "deleted or reordered", 7},
		{"reorder", []string{`UPDATE audit_events SET seq = 100 WHERE seq = 4`, `UPDATE audit_events SET seq = 4 WHERE seq = 5`, `UPDATE audit_events SET seq = 5 WHERE seq = 100`}, "", 4},
		{"rehash one", []string{`UPDATE audit_events SET payload = '{}', hash = 'x' WHERE seq = 2`}, "", 2},
		{"edit blob", []string{`UPDATE audit_blobs SET data = X'666f72676564' WHERE hash = (SELECT hash FROM audit_blobs LIMIT 1)`}, "was changed", 0},
		{"delete blob", []string{`DELETE FROM audit_blobs WHERE rowid = (SELECT min(rowid) FROM audit_blobs)`}, "is missing", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, st, db := openLog(t, maskRedactor{})
			record(t, l, 10)
			if r := verify(t, st, nil); !r.OK() {
				t.Fatalf("before: %s", r)
			}
			tamper(t, db, tc.sql...)
			r := verify(t, st, nil)
			if r.OK() {
				t.Fatalf("tampering (%s) not detected", tc.name)
			}
			if tc.want != "" && !strings.Contains(r.String(), tc.want) {
				t.Errorf("report %s, want %q", r, tc.want)
			}
			if tc.first > 0 && r.Problem[0].Seq != tc.first {
				t.Errorf("first problem at %d, want %d: %s", r.Problem[0].Seq, tc.first, r)
			}
		})
	}
}

func TestCheckpointCatchesTruncation(t *testing.T) {
	l, st, db := openLog(t, maskRedactor{})
	record(t, l, 10)
	path := filepath.Join(t.TempDir(), "head.json")
	if _, err := l.Checkpoint(path); err != nil {
		t.Fatal(err)
	}
	a, err := ReadAnchor(path, l.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if r := verify(t, st, a); !r.OK() {
		t.Fatalf("before: %s", r)
	}
	tamper(t, db, `DELETE FROM audit_events WHERE seq > 8`)
	if r := verify(t, st, nil); !r.OK() {
		t.Fatalf("without a checkpoint a cut tail is invisible, and this test is wrong: %s", r)
	}
	if r := verify(t, st, a); r.OK() || !strings.Contains(r.String(), "truncated") {
		t.Fatalf("truncation not detected: %s", r)
	}
	a.Hash = strings.Repeat("0", 64)
	if a.Valid() {
		t.Fatal("a forged checkpoint verifies")
	}
}

func TestRedactedBeforeWrite(t *testing.T) {
	const secret = "s3cr3t-value-0123456789"
	l, st, db := openLog(t, maskRedactor{secret})
	if _, err := l.Record(context.Background(), Entry{Kind: "exec.end", Payload: map[string]any{"argv": []string{"curl", "-H", "X: " + secret},
		"stdout": Blob(strings.Repeat("x", MaxInline) + secret), "short": Blob("token " + secret)}}); err != nil {
		t.Fatal(err)
	}
	raw, _ := sql.Open("sqlite", "file:"+db)
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT (SELECT count(*) FROM audit_events WHERE instr(payload, ?) > 0) + (SELECT count(*) FROM audit_blobs WHERE instr(CAST(data AS TEXT), ?) > 0)`, secret, secret).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the secret is stored in %d rows", n)
	}
	if r := verify(t, st, nil); !r.OK() || r.Blobs != 1 {
		t.Fatalf("%s", r)
	}
}

func TestAppendOnlyForTheDaemon(t *testing.T) {
	_, st, db := openLog(t, maskRedactor{})
	l, _ := Open(context.Background(), Config{Store: st, Redactor: maskRedactor{}})
	record(t, l, 2)
	raw, _ := sql.Open("sqlite", "file:"+db)
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE audit_events SET kind = 'x'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("update allowed: %v", err)
	}
	if _, err := raw.Exec(`DELETE FROM audit_events`); err == nil {
		t.Fatal("delete allowed")
	}
}

func TestConcurrentRecordsChain(t *testing.T) {
	l, st, _ := openLog(t, maskRedactor{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if _, err := l.Record(context.Background(), Entry{Kind: "api.request", Payload: map[string]any{"g": g, "i": i}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if r := verify(t, st, nil); !r.OK() || r.Events != 1600 {
		t.Fatalf("%s", r)
	}
}

// BenchmarkAuditWrites: sustained writes from 8 concurrent writers
// (target >= 5,000 events/s), with one writer as the peer, and with the
// daemon's periodic checkpoints on (the default 1000 events / 60 s).
func BenchmarkAuditWrites(b *testing.B) {
	for _, run := range []struct {
		writers     int
		checkpoints bool
	}{{1, false}, {8, false}, {8, true}} {
		writers := run.writers
		name := fmt.Sprintf("writers=%d", writers)
		if run.checkpoints {
			name += ",checkpoints"
		}
		b.Run(name, func(b *testing.B) {
			l, st, _ := openLog(b, maskRedactor{})
			// The events name a recorded sandbox, as the daemon's do
			// (its project is then looked up once).
			if err := st.PutSandbox(context.Background(), &store.Sandbox{ID: "sb", State: store.StateRunning, Created: time.Now()}); err != nil {
				b.Fatal(err)
			}
			if run.checkpoints {
				stop, err := l.StartCheckpoints(filepath.Join(b.TempDir(), "head.json"), DefaultCheckpointEvents, DefaultCheckpointInterval, b.Logf)
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
			}
			b.ResetTimer()
			t0 := time.Now()
			var wg sync.WaitGroup
			per := b.N / writers
			for g := 0; g < writers; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < per; i++ {
						if _, err := l.Record(context.Background(), Entry{SandboxID: "sb", Kind: "exec.start", Payload: map[string]any{"argv": []string{"go", "test", "./..."}, "cwd": "/workspace", "i": i}}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*writers)/time.Since(t0).Seconds(), "events/s")
		})
	}
}

// A checkpoint counts only when the daemon's key signed it: one that
// anyone could sign would vouch for a forged chain (found in review: a
// rewritten chain plus a checkpoint signed with a fresh key verified).
// A missing checkpoint is a failure once the log records one, and the
// start check catches a cut, a rewritten head and a foreign signer.
func TestCheckpointIsTheDaemonsAndMustBeThere(t *testing.T) {
	ctx := context.Background()
	l, st, db := openLog(t, maskRedactor{})
	record(t, l, 5)
	path := filepath.Join(t.TempDir(), "head.json")
	if _, err := l.Checkpoint(path); err != nil {
		t.Fatal(err)
	}
	if r, err := VerifyCheckpointed(ctx, st, path, l.PublicKey()); err != nil || !r.OK() {
		t.Fatalf("untouched: %v %v", r, err)
	}
	if err := CheckStart(ctx, l, st, path); err != nil {
		t.Fatalf("start check, untouched: %v", err)
	}

	// A checkpoint of the same head signed by another key.
	seq, hash := l.Head()
	pub, priv, _ := ed25519.GenerateKey(nil)
	forged := Anchor{Seq: seq, Hash: hash, PublicKey: base64.StdEncoding.EncodeToString(pub), Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, anchorMsg(seq, hash)))}
	b, _ := json.Marshal(forged)
	good, _ := os.ReadFile(path)
	os.WriteFile(path, b, 0o600)
	if !forged.Valid() {
		t.Fatal("the forged anchor should be self-consistent, or this test proves nothing")
	}
	if r, _ := VerifyCheckpointed(ctx, st, path, l.PublicKey()); r.OK() || !strings.Contains(r.String(), "not signed by this daemon's key") {
		t.Errorf("a checkpoint signed by another key: %s", r)
	}
	if err := CheckStart(ctx, l, st, path); err == nil {
		t.Error("the start check took a checkpoint signed by another key")
	}
	os.WriteFile(path, []byte("garbage"), 0o600)
	if r, _ := VerifyCheckpointed(ctx, st, path, l.PublicKey()); r.OK() {
		t.Errorf("an unreadable checkpoint: %s", r)
	}

	// Missing, while the log records that one was written.
	os.Remove(path)
	if r, _ := VerifyCheckpointed(ctx, st, path, l.PublicKey()); r.OK() || !strings.Contains(r.String(), "is missing") {
		t.Errorf("a missing checkpoint: %s", r)
	}
	if err := CheckStart(ctx, l, st, path); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("start check, missing: %v", err)
	}

	// The real checkpoint back; the event it names rewritten.
	os.WriteFile(path, good, 0o600)
	tamper(t, db, fmt.Sprintf(`UPDATE audit_events SET hash = 'x' || substr(hash, 2) WHERE seq = %d`, seq))
	if err := CheckStart(ctx, l, st, path); err == nil || !strings.Contains(err.Error(), "rewritten") {
		t.Errorf("start check, rewritten head: %v", err)
	}
}

// A fresh log with no checkpoint yet is not a failure.
func TestNoCheckpointYetIsFine(t *testing.T) {
	ctx := context.Background()
	l, st, _ := openLog(t, maskRedactor{})
	record(t, l, 2)
	path := filepath.Join(t.TempDir(), "head.json")
	if r, err := VerifyCheckpointed(ctx, st, path, l.PublicKey()); err != nil || !r.OK() {
		t.Fatalf("no checkpoint ever written: %v %v", r, err)
	}
	if err := CheckStart(ctx, l, st, path); err != nil {
		t.Fatal(err)
	}
}

// Text that looks like a blob reference (a command may print anything) is
// not one, and bytes stored after a payload's JSON are a change, not
// something the hash skips (both found in a review-plane review).
func TestVerifyBlobLookalikesAndTrailingBytes(t *testing.T) {
	ctx := context.Background()
	l, st, db := openLog(t, maskRedactor{})
	look := "blob:sha256:" + strings.Repeat("ab", 32)
	if _, err := l.Record(ctx, Entry{Kind: "exec.end", Payload: map[string]any{"stdout": look, "status": map[string]any{"x": map[string]any{"blob": look, "bytes": 3}}}}); err != nil {
		t.Fatal(err)
	}
	record(t, l, 2) // real blobs
	r := verify(t, st, nil)
	if !r.OK() || r.Blobs != 2 {
		t.Fatalf("lookalikes: %s (blobs %d)", r, r.Blobs)
	}
	tamper(t, db, `UPDATE audit_events SET payload = payload || ' {"stdout":"forged"}' WHERE seq = 1`)
	if r := verify(t, st, nil); r.OK() || !strings.Contains(r.String(), "event 1") {
		t.Fatalf("trailing bytes: %s", r)
	}
}
