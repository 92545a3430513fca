package sandboxnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

func rvQuery(t *testing.T, name string) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// Review (rv-daemon): the reserve kept for what must be recorded on a
// full disk (a sandbox's stop, the daemon's) is also where a removed
// sandbox's last refusal summaries go (egressRecorder: Final events are
// essential), one event (one transaction) per refusal kind still open:
// up to 257 per sandbox, uncharged to its budget. A sandbox that asks for
// 256 new denied names just before it is destroyed on a full disk spends
// that much of the reserve, so a few of them leave no room for the
// sandbox.stop and daemon.stop the reserve is for. (Measured before the
// fix, default 8 MiB reserve: 256 summaries, ~2.7% of the reserve, per
// sandbox; a daemon's Close writes them for every sandbox at once.)
func TestReviewFinalSummariesDrainTheReserve(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", 32<<20)); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tdir := t.TempDir()
	tpls, err := template.Open(filepath.Join(tdir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	ctx := context.Background()
	log, err := audit.Open(ctx, audit.Config{Store: st, Redactor: red, ReserveFile: filepath.Join(dir, "audit.reserve")})
	if err != nil {
		t.Fatal(err)
	}
	n := New(Config{Egress: &egress.Config{Limits: egress.Limits{DNSRate: -1, RefusalWindow: time.Hour}}})
	_, err = manager.New(ctx, manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log, Redactor: red,
		AuditRetry: time.Hour, Modules: []hook.Module{n}})
	if err != nil {
		t.Fatal(err)
	}
	const sb = "sb-flood"
	if err := n.svc.SetPolicy(sb, egress.Policy{}); err != nil {
		t.Fatal(err)
	}
	// 256 kinds of refusal, each counted once more after its first.
	for range 2 {
		for i := range 256 {
			if _, err := n.svc.AnswerDNS(ctx, rvQuery(t, fmt.Sprintf("x%d.example.test.", i)), egress.Source{SandboxID: sb}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Fill the disk until the log stops.
	f, err := os.OpenFile(filepath.Join(dir, "filler"), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	for i := 0; log.Err() == nil; i++ {
		if i == 200 {
			t.Fatal("the log never failed on a full disk")
		}
		_, _ = log.Record(ctx, audit.Entry{Kind: "exec.end", Payload: map[string]any{"stdout": audit.Blob(strings.Repeat(fmt.Sprint(i), 50000))}})
	}
	seq, _ := log.Head()
	n.svc.RemoveSandbox(sb) // its final counts: into the reserve
	evs, err := log.Query(ctx, store.AuditFilter{AfterSeq: seq})
	if err != nil {
		t.Fatal(err)
	}
	summaries := 0
	for _, ev := range evs {
		if ev.Kind == string(egress.KindRefusedSummary) {
			summaries++
		}
	}
	t.Logf("one sandbox's removal on a full disk wrote %d summaries into the reserve", summaries)
	if summaries > 4 {
		t.Errorf("one sandbox's removal wrote %d refusal summaries into the reserve kept for stops, want a few", summaries)
	}
	if _, err := log.RecordEssential(ctx, audit.Entry{Kind: "daemon.stop"}); err != nil {
		t.Errorf("daemon.stop after the summaries: %v", err)
	}
}
