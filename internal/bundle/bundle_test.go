package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
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

// tarEntry is one entry of a hand-made bundle: data, or size zeros.
type tarEntry struct {
	name string
	data []byte
	size int64
}

func tarGz(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		size := e.size
		if e.data != nil {
			size = int64(len(e.data))
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		var err error
		if e.data != nil {
			_, err = tw.Write(e.data)
		} else {
			_, err = io.CopyN(tw, zeros{}, size)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// goldenEntries is the golden bundle's entries, manifest first, as Write orders them.
func goldenEntries(t *testing.T) []tarEntry {
	t.Helper()
	events := fixedEvents(t)
	var buf bytes.Buffer
	if err := Write(&buf, sampleContents(), events, 3, events[2].Hash, fixedKey()); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := []tarEntry{{name: ManifestName, data: v.Files[ManifestName]}}
	for _, name := range slices.Sorted(maps.Keys(v.Files)) {
		if name != ManifestName {
			out = append(out, tarEntry{name: name, data: v.Files[name]})
		}
	}
	return out
}

var verifiers = []struct {
	name   string
	verify func(io.Reader, ed25519.PublicKey) (*Verified, error)
}{{"Verify", Verify}, {"VerifyStream", VerifyStream}}

// TestVerifyStream: VerifyStream accepts what Verify does, counts the
// same entries, and holds only the three it parses.
func TestVerifyStream(t *testing.T) {
	b := tarGz(t, goldenEntries(t))
	full, err := Verify(bytes.NewReader(b), fixedKey().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	v, err := VerifyStream(bytes.NewReader(b), fixedKey().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if v.Entries != full.Entries || v.Events != full.Events || v.Manifest.Chain != full.Manifest.Chain {
		t.Errorf("VerifyStream: %d entries, %d events, %+v; Verify: %d, %d, %+v", v.Entries, v.Events, v.Manifest.Chain, full.Entries, full.Events, full.Manifest.Chain)
	}
	if got, want := slices.Sorted(maps.Keys(v.Files)), []string{AuditName, ChecksumsName, ManifestName}; !slices.Equal(got, want) {
		t.Errorf("VerifyStream holds %v; want %v", got, want)
	}
	if len(full.Files) != full.Entries {
		t.Errorf("Verify holds %d of %d entries", len(full.Files), full.Entries)
	}
}

// TestVerifyRefuses: both verifiers refuse a bundle whose entries were
// changed, added, removed, repeated or given an unsafe path.
func TestVerifyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func([]tarEntry) []tarEntry
		want   string
	}{
		{"changed", func(es []tarEntry) []tarEntry {
			for i := range es {
				if es[i].name == "patch.diff" {
					es[i].data = []byte("diff --git a/x b/x\n")
				}
			}
			return es
		}, `"patch.diff" was changed`},
		{"extra", func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{name: "extra.txt", data: []byte("x")})
		}, `"extra.txt" is not in the checksums`},
		{"missing", func(es []tarEntry) []tarEntry {
			return slices.DeleteFunc(es, func(e tarEntry) bool { return e.name == "patch.diff" })
		}, `"patch.diff" is missing`},
		{"twice", func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{name: ReportName, data: []byte("x")})
		}, `"report.html" appears twice`},
		{"unsafe path", func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{name: "../x", data: []byte("x")})
		}, `"../x" has an unsafe path`},
		// A key that Go decodes into the signed field but other readers
		// take as given (found in a review-plane review).
		{"manifest key in another case", func(es []tarEntry) []tarEntry {
			for i := range es {
				if es[i].name == ManifestName {
					es[i].data = bytes.Replace(es[i].data, []byte("{\n"), []byte("{\n  \"Repo\": \"https://evil.example.test/x.git\",\n"), 1)
				}
			}
			return es
		}, `manifest.json is not exactly what was signed`},
	} {
		b := tarGz(t, tc.change(goldenEntries(t)))
		for _, v := range verifiers {
			_, err := v.verify(bytes.NewReader(b), nil)
			if !errors.Is(err, errdefs.ErrInvalid) || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %s: %v; want ErrInvalid saying %s", tc.name, v.name, err, tc.want)
			}
		}
	}
}

// TestVerifyLimits: a bundle past MaxEntries, MaxEntry or MaxTotal, or
// whose checksums name more than MaxEntries entries, is refused before
// the entry that goes past is read. The regression: 16 entries of 200 MiB
// of zeros, 3.2 MB gzipped, made Verify hold 5.2 GB. MaxEntries and
// MaxTotal are scaled down here (to 8 entries and 1 MiB), the regression
// with them, so that the test reads kilobytes, not gigabytes.
func TestVerifyLimits(t *testing.T) {
	small := limits{entries: 8, total: 1 << 20}
	manifest := tarEntry{name: ManifestName, data: []byte("{}")}
	many := []tarEntry{manifest}
	for i := range small.entries {
		many = append(many, tarEntry{name: fmt.Sprintf("e/%d", i), data: []byte{}})
	}
	var zeroes []tarEntry // the sixth goes past 1 MiB
	for i := range 16 {
		zeroes = append(zeroes, tarEntry{name: fmt.Sprintf("zeros/%02d", i), size: 200 << 10})
	}
	var huge bytes.Buffer
	gz := gzip.NewWriter(&huge)
	// Only the header: the refusal must come before any of the data is read.
	_ = tar.NewWriter(gz).WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: MaxEntry + 1, Typeflag: tar.TypeReg})
	_ = gz.Close()

	for _, tc := range []struct {
		name   string
		bundle []byte
		want   string
	}{
		{"entries", tarGz(t, many), "more than 8 entries"},
		{"checksums", tarGz(t, []tarEntry{manifest, {name: ChecksumsName, data: checksumsNaming(small.entries + 1)}}), "more than 8 names"},
		{"entry", huge.Bytes(), fmt.Sprintf(`"big" is larger than %d bytes`, MaxEntry)},
		{"total", tarGz(t, zeroes), `"zeros/05" takes the bundle past 1048576 bytes in all`},
	} {
		for _, keepAll := range []bool{true, false} {
			_, err := verify(bytes.NewReader(tc.bundle), nil, keepAll, small)
			if !errors.Is(err, errdefs.ErrInvalid) || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s (keep all %v): %v; want ErrInvalid saying %s", tc.name, keepAll, err, tc.want)
			}
		}
	}
	// At the real limits: checksums naming more than MaxEntries entries
	// (a few MB of tiny pairs) are refused as they are decoded.
	b := tarGz(t, []tarEntry{manifest, {name: ChecksumsName, data: checksumsNaming(MaxEntries + 1)}})
	if _, err := Verify(bytes.NewReader(b), nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d names", MaxEntries)) {
		t.Errorf("checksums naming %d entries: %v", MaxEntries+1, err)
	}
}

// checksumsNaming is a checksums.json naming n entries.
func checksumsNaming(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"e%d":""`, i)
	}
	b.WriteByte('}')
	return b.Bytes()
}
