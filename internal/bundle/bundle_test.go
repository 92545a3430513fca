package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
)

var updateBundle = flag.Bool("update-bundle", false, "rewrite testdata/bundle.golden.json")

type seedKey struct{ k ed25519.PrivateKey }

func (s seedKey) Sign(m []byte) []byte         { return ed25519.Sign(s.k, m) }
func (s seedKey) PublicKey() ed25519.PublicKey { return s.k.Public().(ed25519.PublicKey) }
func fixedKey() seedKey                        { return seedKey{ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))} }
func fixedEvents(t *testing.T) []*audit.Event {
	var out []*audit.Event
	prev := ""
	for i := int64(1); i <= 3; i++ {
		e := &audit.Event{Seq: i, Time: time.Date(2026, 11, 29, 12, 0, int(i), 0, time.UTC), SandboxID: "sb", Kind: "exec.start", Actor: "operator",
			Payload: json.RawMessage(`{"argv":["go","test"]}`), Prev: prev}
		h, err := audit.HashOf(e)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, prev = h, h
		out = append(out, e)
	}
	return out
}

// TestBundleGolden: the same contents make the same bundle: its entry
// names, checksums and manifest (signature included: ed25519 is
// deterministic) equal testdata/bundle.golden.json.
func TestBundleGolden(t *testing.T) {
	events := fixedEvents(t)
	var buf bytes.Buffer
	if err := Write(&buf, sampleContents(), events, 3, events[2].Hash, fixedKey()); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(bytes.NewReader(buf.Bytes()), fixedKey().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(map[string]json.RawMessage{"manifest": v.Files[ManifestName], "checksums": v.Files[ChecksumsName]}, "", "  ")
	if *updateBundle {
		if err := os.WriteFile("testdata/bundle.golden.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("testdata/bundle.golden.json")
	if err != nil {
		t.Fatalf("%v (run go test -update-bundle once)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the bundle changed; review and run go test -update-bundle:\n%s", got)
	}
	for _, name := range []string{"patch.diff", "files.json", "commands.jsonl", "approvals.jsonl", "dependencies.json", "tests.json", "artifacts.json", AuditName, ReportName} {
		if _, ok := v.Files[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	for name := range v.Files {
		if strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
			t.Errorf("unsafe entry %s", name)
		}
	}
	// Another key: refused when the trusted one is pinned.
	other := seedKey{ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))}
	if _, err := Verify(bytes.NewReader(buf.Bytes()), other.PublicKey()); err == nil {
		t.Fatal("a bundle verified under another key")
	}
	// An audit excerpt that was edited is refused.
	events[1].Payload = json.RawMessage(`{"argv":["rm","-rf","/"]}`)
	var forged bytes.Buffer
	_ = Write(&forged, sampleContents(), events, 3, events[2].Hash, fixedKey())
	if _, err := Verify(bytes.NewReader(forged.Bytes()), nil); err == nil || !strings.Contains(err.Error(), AuditName) {
		t.Fatalf("an edited audit excerpt: %v", err)
	}
}
