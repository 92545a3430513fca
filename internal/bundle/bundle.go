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

// MaxEntry bounds one entry when verifying (and reading) a bundle.
const MaxEntry = 256 << 20

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
// end at or before the signed head.
func Verify(r io.Reader, trusted ed25519.PublicKey) (*Verified, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("bundle refused: "+format+": %w", append(args, errdefs.ErrInvalid)...)
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, bad("not a gzip stream (%v)", err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
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
		if _, dup := files[name]; dup {
			return nil, bad("entry %q appears twice", name)
		}
		if hdr.Size > MaxEntry {
			return nil, bad("entry %q is larger than %d bytes", name, MaxEntry)
		}
		data, err := io.ReadAll(io.LimitReader(tr, MaxEntry+1))
		if err != nil {
			return nil, bad("entry %q: %v", name, err)
		}
		files[name] = data
	}
	var m Manifest
	if err := json.Unmarshal(files[ManifestName], &m); err != nil {
		return nil, bad("no readable %s", ManifestName)
	}
	var sums map[string]string
	if err := json.Unmarshal(files[ChecksumsName], &sums); err != nil {
		return nil, bad("no readable %s", ChecksumsName)
	}
	for name, data := range files {
		if name == ManifestName || name == ChecksumsName {
			continue
		}
		want, ok := sums[name]
		if !ok {
			return nil, bad("entry %q is not in the checksums", name)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != want {
			return nil, bad("entry %q was changed (checksum differs)", name)
		}
	}
	for name := range sums {
		if _, ok := files[name]; !ok {
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
	return &Verified{Manifest: m, Entries: len(files), Events: len(events), Files: files}, nil
}
