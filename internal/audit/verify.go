package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/store"
)

// Problem is one place where the record does not hold together.
type Problem struct {
	Seq  int64  `json:"seq"`
	What string `json:"what"`
}

// Report is the result of Verify.
type Report struct {
	Events  int64     `json:"events"`
	Head    int64     `json:"head_seq"`
	Hash    string    `json:"head_hash"`
	Blobs   int       `json:"blobs"`
	Purged  int       `json:"blobs_purged"`
	Problem []Problem `json:"problems"`
}

// OK reports whether the chain verified.
func (r *Report) OK() bool { return len(r.Problem) == 0 }

var blobRE = lazyre.New(`^blob:sha256:([0-9a-f]{64})$`)

// blobRefs returns the blobs a payload refers to: its top-level values
// that are blob references ({"blob": "blob:sha256:HEX", "bytes": N}, as
// Record makes them), not any text that looks like one (a command's
// output may print anything).
func blobRefs(payload []byte) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(payload, &top) != nil {
		return nil
	}
	var out []string
	for _, v := range top {
		var ref map[string]json.RawMessage
		if json.Unmarshal(v, &ref) != nil || len(ref) != 2 || ref["bytes"] == nil {
			continue
		}
		var s string
		if json.Unmarshal(ref["blob"], &s) != nil {
			continue
		}
		if m := blobRE().FindStringSubmatch(s); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// PurgeKind is the event a purge records; its payload's "blobs_before"
// (RFC 3339) says which blobs may be missing.
const PurgeKind = "operator.purge"

// Verify recomputes the whole chain from the database: every event's
// hash over its canonical encoding, every link to the previous hash,
// contiguous sequence numbers (a deleted or reordered event breaks
// them), and every blob's content against its address. An anchor (a
// head recorded earlier, see Checkpoint) also catches a truncated tail.
func Verify(ctx context.Context, st *store.Store, anchor *Anchor) (*Report, error) {
	r := &Report{Problem: []Problem{}}
	var prev string
	var expect int64 = 1
	var purgedBefore time.Time
	type blobUse struct {
		seq  int64
		hash string
		at   time.Time
	}
	var uses []blobUse
	anchorSeen := false
	for after := int64(0); ; {
		rows, err := st.AuditEvents(ctx, store.AuditFilter{AfterSeq: after, Limit: 5000})
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			break
		}
		for _, row := range rows {
			e := fromRow(row)
			after = e.Seq
			r.Events++
			if e.Seq != expect {
				r.Problem = append(r.Problem, Problem{e.Seq, fmt.Sprintf("sequence jumps from %d to %d: events deleted or reordered", expect-1, e.Seq)})
			}
			if e.Prev != prev {
				r.Problem = append(r.Problem, Problem{e.Seq, "does not link to the event before it (prev hash differs)"})
			}
			h, err := HashOf(e)
			if err != nil {
				r.Problem = append(r.Problem, Problem{e.Seq, "payload is not JSON: " + err.Error()})
			} else if h != e.Hash {
				r.Problem = append(r.Problem, Problem{e.Seq, "content was changed after it was written (hash differs)"})
			}
			if e.Kind == PurgeKind {
				var p struct {
					BlobsBefore time.Time `json:"blobs_before"`
				}
				if json.Unmarshal(e.Payload, &p) == nil && p.BlobsBefore.After(purgedBefore) {
					purgedBefore = p.BlobsBefore
				}
			}
			if c, err := canonicalJSON(e.Payload); err == nil && !bytes.Equal(c, e.Payload) {
				// The hash covers the canonical form: bytes beside it
				// (trailing data, other spellings) would go unhashed.
				r.Problem = append(r.Problem, Problem{e.Seq, "payload is not stored in its canonical form"})
			}
			for _, h := range blobRefs(e.Payload) {
				uses = append(uses, blobUse{e.Seq, h, e.Time})
			}
			if anchor != nil && e.Seq == anchor.Seq {
				anchorSeen = true
				if e.Hash != anchor.Hash {
					r.Problem = append(r.Problem, Problem{e.Seq, "differs from the signed checkpoint"})
				}
			}
			prev, expect = e.Hash, e.Seq+1
			r.Head, r.Hash = e.Seq, e.Hash
		}
	}
	if anchor != nil && !anchorSeen && anchor.Seq > 0 {
		r.Problem = append(r.Problem, Problem{anchor.Seq, fmt.Sprintf("the signed checkpoint names event %d, which is gone: the log was truncated", anchor.Seq)})
	}
	seen := map[string]bool{}
	for _, u := range uses {
		if seen[u.hash] {
			continue
		}
		seen[u.hash] = true
		data, err := st.AuditBlob(ctx, u.hash)
		switch {
		case errors.Is(err, errdefs.ErrNotFound) && u.at.Before(purgedBefore):
			r.Purged++
		case err != nil:
			r.Problem = append(r.Problem, Problem{u.seq, "blob " + u.hash[:12] + " is missing"})
		default:
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != u.hash {
				r.Problem = append(r.Problem, Problem{u.seq, "blob " + u.hash[:12] + " was changed"})
			}
			r.Blobs++
		}
	}
	return r, nil
}

// VerifyEvents checks events on their own (a bundle's excerpt of the
// chain): each hash over its canonical encoding, increasing sequence.
func VerifyEvents(events []*Event) []Problem {
	var out []Problem
	var last int64
	for _, e := range events {
		if e.Seq <= last {
			out = append(out, Problem{e.Seq, "out of order"})
		}
		last = e.Seq
		if h, err := HashOf(e); err != nil || h != e.Hash {
			out = append(out, Problem{e.Seq, "content was changed after it was written (hash differs)"})
		}
	}
	return out
}

// Anchor is a signed statement of the chain's head at some moment.
type Anchor struct {
	Seq       int64  `json:"seq"`
	Hash      string `json:"hash"`
	PublicKey string `json:"public_key"`
	Signature string `json:"signature"`
}

func anchorMsg(seq int64, hash string) []byte {
	return []byte(fmt.Sprintf("airlock audit head %d %s", seq, hash))
}

// CheckpointKind is the event the log records each time a checkpoint is
// written, so that the chain itself says that one exists: a checkpoint
// file that goes missing afterwards is then a problem, not a fresh start.
const CheckpointKind = "audit.checkpoint"

// Checkpoint records a CheckpointKind event, signs the head (that event
// included) and writes it to path (atomically, synced): later
// verification then notices a tail cut off the log. Checkpoints are
// serialized, so a checkpoint's file is in place before the next one's
// event is recorded.
func (l *Log) Checkpoint(path string) (*Anchor, error) {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	if path != "" {
		if _, err := l.Record(context.Background(), Entry{Kind: CheckpointKind, Payload: map[string]any{"file": filepath.Base(path)}}); err != nil {
			return nil, err
		}
	}
	seq, hash := l.Head()
	a := &Anchor{Seq: seq, Hash: hash, PublicKey: base64.StdEncoding.EncodeToString(l.PublicKey()),
		Signature: base64.StdEncoding.EncodeToString(l.Sign(anchorMsg(seq, hash)))}
	if path == "" {
		return a, nil
	}
	b, _ := json.MarshalIndent(a, "", "  ")
	if err := writeSynced(path, b); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.signedSeq = max(l.signedSeq, seq)
	l.mu.Unlock()
	return a, nil
}

// writeSynced replaces path by data through a synced temporary file, so
// that a crash leaves the old checkpoint or the new one, never a torn one
// (which would stop the next start).
func writeSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// ReadAnchor reads a checkpoint and checks its signature, by pub when pub
// is given (the daemon's key: a checkpoint signed by any other key is
// refused, or anyone could write one for a forged chain), else only by
// the key it names.
func ReadAnchor(path string, pub ed25519.PublicKey) (*Anchor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var a Anchor
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("audit checkpoint %s: %v: %w", path, err, errdefs.ErrInvalid)
	}
	if !a.Valid() {
		return nil, fmt.Errorf("audit checkpoint %s: bad signature: %w", path, errdefs.ErrInvalid)
	}
	if pub != nil && a.PublicKey != base64.StdEncoding.EncodeToString(pub) {
		return nil, fmt.Errorf("audit checkpoint %s: not signed by this daemon's key: %w", path, errdefs.ErrInvalid)
	}
	return &a, nil
}

// CheckStart checks, cheaply, that the log still holds the head its
// checkpoint at path signed (by pub), before a daemon writes to it: an
// error says what is wrong (a cut tail, a changed event at the signed
// head, a checkpoint that is unreadable, signed by another key, or missing
// although the log records one).
func CheckStart(ctx context.Context, l *Log, st *store.Store, path string) error {
	a, err := ReadAnchor(path, l.PublicKey())
	if errors.Is(err, os.ErrNotExist) {
		rows, qerr := st.AuditEvents(ctx, store.AuditFilter{Kind: CheckpointKind, Limit: 1})
		if qerr != nil {
			return qerr
		}
		if len(rows) > 0 {
			return fmt.Errorf("the signed audit checkpoint %s is missing although event %d records one: a cut tail would not show", path, rows[0].Seq)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if seq, _ := l.Head(); seq < a.Seq {
		return fmt.Errorf("the audit log ends at event %d, but its signed checkpoint names event %d: it was truncated", seq, a.Seq)
	}
	if a.Seq > 0 {
		rows, err := st.AuditEvents(ctx, store.AuditFilter{AfterSeq: a.Seq - 1, Limit: 1})
		if err != nil {
			return err
		}
		if len(rows) == 0 || rows[0].Seq != a.Seq || rows[0].Hash != a.Hash {
			return fmt.Errorf("audit event %d is not the one the signed checkpoint names: the log was rewritten", a.Seq)
		}
	}
	if what, err := rolledBack(ctx, st, path, a, l.PublicKey()); err != nil || what != "" {
		if err != nil {
			return err
		}
		return errors.New(what)
	}
	l.mu.Lock()
	l.signedSeq = max(l.signedSeq, a.Seq)
	l.mu.Unlock()
	return nil
}

// VerifyCheckpointed is Verify against the checkpoint at path, checked
// against pub (see ReadAnchor). A checkpoint that cannot be read, or is
// signed by another key, is a problem; so is a missing one once the log
// records that one was written (CheckpointKind).
func VerifyCheckpointed(ctx context.Context, st *store.Store, path string, pub ed25519.PublicKey) (*Report, error) {
	var extra []Problem
	a, err := ReadAnchor(path, pub)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist):
		a = nil
		rows, qerr := st.AuditEvents(ctx, store.AuditFilter{Kind: CheckpointKind, Limit: 1})
		if qerr != nil {
			return nil, qerr
		}
		if len(rows) > 0 {
			extra = append(extra, Problem{0, fmt.Sprintf("the signed checkpoint %s is missing although event %d records one: a cut tail would not show", path, rows[0].Seq)})
		}
	default:
		a = nil
		extra = append(extra, Problem{0, err.Error()})
	}
	r, err := Verify(ctx, st, a)
	if err != nil {
		return nil, err
	}
	if a != nil {
		what, err := rolledBack(ctx, st, path, a, pub)
		if err != nil {
			return nil, err
		}
		if what != "" {
			extra = append(extra, Problem{a.Seq, what})
		}
	}
	r.Problem = append(r.Problem, extra...)
	return r, nil
}

// Valid checks the anchor's signature against its own public key.
func (a *Anchor) Valid() bool {
	pub, err1 := base64.StdEncoding.DecodeString(a.PublicKey)
	sig, err2 := base64.StdEncoding.DecodeString(a.Signature)
	if err1 != nil || err2 != nil || len(pub) != ed25519.PublicKeySize {
		return false
	}
	return ed25519.Verify(pub, anchorMsg(a.Seq, a.Hash), sig)
}

// String is a one-line summary.
func (r *Report) String() string {
	if r.OK() {
		return fmt.Sprintf("ok: %d events, head %d %s, %d blobs (%d purged)", r.Events, r.Head, short(r.Hash), r.Blobs, r.Purged)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "FAILED: %d problems in %d events", len(r.Problem), r.Events)
	for _, p := range r.Problem {
		fmt.Fprintf(&b, "\n  event %d: %s", p.Seq, p.What)
	}
	return b.String()
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}
