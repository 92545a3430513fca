// Package bundle writes and verifies review bundles: everything a human
// reviewer needs about one task (manifest, patch, changed files,
// commands and outputs, tests, approvals, network, dependencies, scanned
// artifacts, the task's excerpt of the audit chain, report.html), with
// a checksum of every entry and the daemon's ed25519 signature over the
// checksums and the audit chain head. Only the daemon makes bundles;
// anyone may verify one.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Signer is the daemon's key (audit.Log).
type Signer interface {
	Sign(msg []byte) []byte
	PublicKey() ed25519.PublicKey
}

// Entry names.
const (
	ManifestName  = "manifest.json"
	ChecksumsName = "checksums.json"
	AuditName     = "audit.jsonl"
	ReportName    = "report.html"
)

// Limits on what Verify reads, so that a small bundle cannot make it read
// or hold without end (gzip makes 200 MiB of zeros 200 KiB). The exporter
// caps each thing it puts in a bundle, and these leave a real bundle
// plenty of room:
//
//   - MaxEntry bounds one entry. The largest the exporter writes is the
//     patch (at most 64 MiB, the manager's MaxPatch); an artifact is at
//     most LargeArtifact and a stream of a command's output 1 MiB by
//     default.
//   - MaxEntries bounds how many entries. A bundle has a dozen fixed
//     entries, two per command (stdout, stderr) and one per included
//     artifact, each a file the task added: an OCI sandbox's disk has at
//     most 200,000 inodes by default, and 2^18 holds that many artifacts
//     and 30,000 commands besides.
//   - MaxTotal bounds the entries' contents and names in all. The daemon
//     builds a whole bundle in memory before writing it, so the bundles it
//     makes stay far below 1 GiB, which holds the patch twice (patch.diff
//     and report.html), 300 commands whose output filled both streams and
//     25 artifacts of the largest size included.
const (
	MaxEntry   = 256 << 20
	MaxEntries = 1 << 18
	MaxTotal   = 4 * MaxEntry
)

// sigMsg is what the daemon signs: the checksums of every entry, the
// manifest (without its chain head), and the chain head.
func sigMsg(checksums []byte, m Manifest) []byte {
	seq, hash := m.Chain.Seq, m.Chain.Hash
	m.Chain = ChainHead{}
	body, _ := json.Marshal(m)
	sum := sha256.Sum256(checksums)
	msum := sha256.Sum256(body)
	return []byte("airlock bundle " + hex.EncodeToString(sum[:]) + " manifest " + hex.EncodeToString(msum[:]) + " audit " + strconv.FormatInt(seq, 10) + " " + hash)
}

// Entries lays out a bundle's files (name -> content), everything but
// the manifest and checksums.
func Entries(c *Contents, events []*audit.Event) (map[string][]byte, error) {
	files := map[string][]byte{}
	put := func(name string, v any) {
		b, _ := json.MarshalIndent(v, "", "  ")
		files[name] = append(b, '\n')
	}
	lines := func(name string, n int, item func(i int) any) {
		var b bytes.Buffer
		for i := 0; i < n; i++ {
			j, _ := json.Marshal(item(i))
			b.Write(j)
			b.WriteByte('\n')
		}
		files[name] = b.Bytes()
	}
	files["patch.diff"] = []byte(c.Patch)
	put("files.json", map[string]any{"files": orEmpty(c.Files), "out_of_scope": orEmpty(c.OutOfScope)})
	lines("commands.jsonl", len(c.Commands), func(i int) any { return c.Commands[i] })
	ids := make([]string, 0, len(c.Outputs))
	for id := range c.Outputs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := c.Outputs[id]
		for i, stream := range []string{"stdout", "stderr"} {
			if len(o[i]) > 0 {
				name, err := SafePath("outputs/" + id + "." + stream)
				if err != nil {
					return nil, err
				}
				files[name] = o[i]
			}
		}
	}
	if c.Network != nil {
		lines("network.jsonl", len(c.Network), func(i int) any { return c.Network[i] })
	}
	lines("approvals.jsonl", len(c.Approvals), func(i int) any { return c.Approvals[i] })
	put("dependencies.json", c.Dependencies)
	put("tests.json", orEmpty(c.Tests))
	put("artifacts.json", orEmpty(c.Artifacts))
	for _, a := range c.Artifacts {
		if !a.Included {
			continue
		}
		name, err := SafePath("artifacts/" + a.Path)
		if err != nil {
			return nil, fmt.Errorf("artifact %q: %w", a.Path, err)
		}
		files[name] = c.ArtifactData[a.Path]
	}
	lines(AuditName, len(events), func(i int) any { return events[i] })
	report, err := Report(c)
	if err != nil {
		return nil, err
	}
	files[ReportName] = report
	return files, nil
}

// orEmpty makes nil lists encode as [], so readers need not tell the two apart.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Write writes a signed bundle as a gzipped tar to w. head is the audit
// chain's head when the bundle is made; it is signed with the checksums
// of every entry.
func Write(w io.Writer, c *Contents, events []*audit.Event, seq int64, hash string, key Signer) error {
	// The report shows the head and the key; the signature it cannot
	// (the report is one of the entries signed).
	c.Manifest.Chain = ChainHead{Seq: seq, Hash: hash, PublicKey: base64.StdEncoding.EncodeToString(key.PublicKey())}
	files, err := Entries(c, events)
	if err != nil {
		return err
	}
	sums := map[string]string{}
	for name, data := range files {
		sum := sha256.Sum256(data)
		sums[name] = hex.EncodeToString(sum[:])
	}
	checksums, _ := json.MarshalIndent(sums, "", "  ")
	c.Manifest.Chain.Signature = base64.StdEncoding.EncodeToString(key.Sign(sigMsg(checksums, c.Manifest)))
	manifest, _ := json.MarshalIndent(c.Manifest, "", "  ")
	files[ChecksumsName] = checksums
	files[ManifestName] = manifest

	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	// The manifest first: a reader sees what the bundle is before anything.
	order := append([]string{ManifestName}, remove(names, ManifestName)...)
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	mtime := c.Manifest.Finished
	if mtime.IsZero() {
		mtime = time.Unix(0, 0)
	}
	for _, n := range order {
		if _, err := SafePath(n); err != nil {
			return fmt.Errorf("bundle entry %q: %w", n, err)
		}
		hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func remove(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// Verified is what Verify found.
type Verified struct {
	Manifest Manifest          `json:"manifest"`
	Entries  int               `json:"entries"`
	Events   int               `json:"audit_events"`
	Files    map[string][]byte `json:"-"`
}

// Verify reads a bundle and refuses it (an ErrInvalid error naming the
// first problem) unless every entry is a regular file with a safe,
// unique path, every entry's checksum matches checksums.json (nothing
// missing, nothing extra), the signature over the checksums and the
// chain head is valid (for trusted, when given, else for the key the
// manifest names), and the audit excerpt's events hash correctly and
// end at or before the signed head. It also refuses a bundle past
// MaxEntry, MaxEntries or MaxTotal, before reading the entry that would
// go past. Files holds every entry, so Verify may hold up to MaxTotal
// bytes; VerifyStream checks the same without holding them.
func Verify(r io.Reader, trusted ed25519.PublicKey) (*Verified, error) {
	return verify(r, trusted, true, limits{entries: MaxEntries, total: MaxTotal})
}

// VerifyStream checks and refuses what Verify does, but holds only the
// entries it must parse (manifest.json, checksums.json, audit.jsonl), in
// Files: it hashes the others as they stream past. For callers that need
// the verdict, not the contents.
func VerifyStream(r io.Reader, trusted ed25519.PublicKey) (*Verified, error) {
	return verify(r, trusted, false, limits{entries: MaxEntries, total: MaxTotal})
}

// limits are MaxEntries and MaxTotal, smaller in tests.
type limits struct {
	entries int
	total   int64
}

func verify(r io.Reader, trusted ed25519.PublicKey, keepAll bool, lim limits) (*Verified, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("bundle refused: "+format+": %w", append(args, errdefs.ErrInvalid)...)
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, bad("not a gzip stream (%v)", err)
	}
	tr := tar.NewReader(gz)
	digests := map[string][sha256.Size]byte{}
	files := map[string][]byte{}
	var total int64
	copyBuf := make([]byte, 32<<10) // io.Copy would make one per entry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bad("not a tar stream (%v)", err)
		}
		name, perr := SafePath(hdr.Name)
		if perr != nil || name != hdr.Name {
			return nil, bad("entry %q has an unsafe path", hdr.Name)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, bad("entry %q is not a regular file (type %q)", hdr.Name, hdr.Typeflag)
		}
		if _, dup := digests[name]; dup {
			return nil, bad("entry %q appears twice", name)
		}
		if len(digests) >= lim.entries {
			return nil, bad("more than %d entries", lim.entries)
		}
		if hdr.Size > MaxEntry {
			return nil, bad("entry %q is larger than %d bytes", name, MaxEntry)
		}
		// Checked on the size the header declares, before reading any of it.
		if total += int64(len(name)) + hdr.Size; total > lim.total {
			return nil, bad("entry %q takes the bundle past %d bytes in all", name, lim.total)
		}
		h := sha256.New()
		var keep *bytes.Buffer
		var w io.Writer = h
		if keepAll || name == ManifestName || name == ChecksumsName || name == AuditName {
			keep = bytes.NewBuffer(make([]byte, 0, hdr.Size))
			w = io.MultiWriter(h, keep)
		}
		if _, err := io.CopyBuffer(w, tr, copyBuf); err != nil {
			return nil, bad("entry %q: %v", name, err)
		}
		digests[name] = [sha256.Size]byte(h.Sum(nil))
		if keep != nil {
			files[name] = keep.Bytes()
		}
	}
	var m Manifest
	if err := json.Unmarshal(files[ManifestName], &m); err != nil {
		return nil, bad("no readable %s", ManifestName)
	}
	sums, err := decodeChecksums(files[ChecksumsName], lim.entries)
	if err != nil {
		return nil, bad("no readable %s (%v)", ChecksumsName, err)
	}
	for name, sum := range digests {
		if name == ManifestName || name == ChecksumsName {
			continue
		}
		want, ok := sums[name]
		if !ok {
			return nil, bad("entry %q is not in the checksums", name)
		}
		if hex.EncodeToString(sum[:]) != want {
			return nil, bad("entry %q was changed (checksum differs)", name)
		}
	}
	for name := range sums {
		if _, ok := digests[name]; !ok {
			return nil, bad("entry %q is missing", name)
		}
	}
	pub, err := base64.StdEncoding.DecodeString(m.Chain.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, bad("the manifest names no valid public key")
	}
	if trusted != nil && !bytes.Equal(trusted, pub) {
		return nil, bad("signed by another key than the trusted one")
	}
	// The signature covers the manifest as decoded; its bytes must be
	// exactly that, or a reader that decodes differently (a duplicate key,
	// one spelled in another case, a field airlock does not know) would
	// see something unsigned.
	if again, _ := json.MarshalIndent(m, "", "  "); !bytes.Equal(again, files[ManifestName]) {
		return nil, bad("%s is not exactly what was signed (extra, duplicate or re-spelled fields)", ManifestName)
	}
	sig, err := base64.StdEncoding.DecodeString(m.Chain.Signature)
	if err != nil || !ed25519.Verify(pub, sigMsg(files[ChecksumsName], m), sig) {
		return nil, bad("the signature does not verify")
	}
	var events []*audit.Event
	dec := json.NewDecoder(bytes.NewReader(files[AuditName]))
	for dec.More() {
		var e audit.Event
		if err := dec.Decode(&e); err != nil {
			return nil, bad("%s: %v", AuditName, err)
		}
		events = append(events, &e)
	}
	if probs := audit.VerifyEvents(events); len(probs) > 0 {
		return nil, bad("%s: event %d: %s", AuditName, probs[0].Seq, probs[0].What)
	}
	if n := len(events); n > 0 && events[n-1].Seq > m.Chain.Seq {
		return nil, bad("%s goes past the signed chain head", AuditName)
	}
	for _, e := range events {
		if e.Seq == m.Chain.Seq && e.Hash != m.Chain.Hash {
			return nil, bad("the signed chain head differs from event %d", e.Seq)
		}
	}
	return &Verified{Manifest: m, Entries: len(digests), Events: len(events), Files: files}, nil
}

// decodeChecksums reads checksums.json (entry name -> hex sha256), a JSON
// object of at most limit names. (json.Unmarshal would map every pair
// first: an entry of MaxEntry bytes holds tens of millions of tiny ones.)
func decodeChecksums(b []byte, limit int) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	sums := map[string]string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := t.(string)
		if !ok {
			return nil, errors.New("not a JSON object of names")
		}
		var sum string
		if err := dec.Decode(&sum); err != nil {
			return nil, fmt.Errorf("%q: %w", name, err)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("%q twice", name)
		}
		if len(sums) >= limit {
			return nil, fmt.Errorf("more than %d names", limit)
		}
		sums[name] = sum
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the object")
	}
	return sums, nil
}
