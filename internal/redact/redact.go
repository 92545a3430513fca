// Package redact is airlock's one secret detector: it finds known secret values (also
// encoded) and common token shapes, and replaces them with "[REDACTED:<kind>]". Audit,
// logs, events and bundles redact with it before anything is stored or shown, and artifact
// scans report its findings. Any package may import it: it does no I/O, imports nothing
// from airlock, and a *Redactor is safe for concurrent use (Add included).
package redact

import (
	"bytes"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Finding is one secret found in some data.
type Finding struct {
	Kind       string // "known-secret", "aws-access-key", "aws-secret-key", "github-token", "gitlab-token", "slack-token", "private-key", "jwt", "bearer-token", "generic-api-key", "stripe-key", "google-api-key", "npm-token", "password-in-url"
	Start, End int    // byte offsets in the input
}

// KindKnown is the kind of a finding of a value given to New or Add.
const KindKnown = "known-secret"

// Redactor replaces secrets with "[REDACTED:<kind>]". The zero value detects token shapes
// only; a nil *Redactor works like the zero value. A Redactor must not be copied after use.
type Redactor struct {
	mu    sync.Mutex            // serialises Add; readers never take it
	known atomic.Pointer[known] // rebuilt on Add, so Find reads a snapshot without locking
}

// New returns a redactor that also knows these exact secret values.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.add(secrets)
	return r
}

// Add teaches it more exact values (each ignored if shorter than 6 bytes, to avoid redacting
// everything; values made only of whitespace are ignored for the same reason). The index is
// rebuilt once per call: add many values in one call, not one call each.
//
// Add on a nil *Redactor panics rather than forget the secret: a value that was meant to be
// redacted and silently is not would leak later.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		panic("redact: Add on a nil *Redactor")
	}
	r.add(secrets)
}

func (r *Redactor) add(secrets []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.known.Load()
	var values []string
	if old != nil {
		values = old.values
	}
	var added bool
	for _, s := range secrets {
		if len(s) < minSecret || len(bytes.TrimSpace([]byte(s))) == 0 || slices.Contains(values, s) {
			continue
		}
		// Appending to a slice a published snapshot shares would race with its readers.
		values = append(slices.Clip(values), s)
		added = true
	}
	if added {
		r.known.Store(newKnown(values))
	}
}

func (r *Redactor) snapshot() *known {
	if r == nil {
		return nil
	}
	return r.known.Load()
}

// Find reports every secret in b (known values first, then shapes), non-overlapping, sorted
// by Start. Overlapping matches are merged into one finding that covers them all, with the
// kind of the highest-priority match: known values first, then shapes in the order of the
// rules table (specific token formats before the generic assignment rule).
func (r *Redactor) Find(b []byte) []Finding {
	fs, _ := r.find(b)
	return fs
}

// LongestMatch is the most bytes one finding of a known value can cover,
// in any of its forms (hex, URL-escaped, wrapped base64 ...); 0 when no
// value is known. A writer that stores a stream in pieces holds back at
// least this much of its tail: a value that is still arriving there is not
// found yet, and a cut inside it would keep part of it. (Token shapes are
// far shorter than the 64 KiB such writers hold back anyway.)
func (r *Redactor) LongestMatch() int {
	k := r.snapshot()
	if k == nil {
		return 0
	}
	return k.longest
}

// Redact returns b with every finding replaced, and whether anything was replaced. b is not
// modified; the result is always a fresh copy (nil for nil b), so callers may keep it while
// b's buffer is reused.
func (r *Redactor) Redact(b []byte) ([]byte, bool) {
	fs, out := r.find(b)
	if fs == nil {
		return bytes.Clone(b), false
	}
	return out, true
}

// String is Redact for strings.
func (r *Redactor) String(s string) string {
	fs, out := r.find([]byte(s))
	if fs == nil {
		return s
	}
	return string(out)
}

// maxPasses bounds the scans find makes of one input; see find.
const maxPasses = 16

// find returns the findings in b and b with them replaced (nil if there are none).
//
// Replacing a secret changes its neighbours' context: "xAKIA..." is no access key, but
// "[REDACTED:known-secret]AKIA..." is, because "]" is a word boundary. Redaction must be
// idempotent (redacting stored output again must not change it, or re-redacted logs drift),
// so find scans its own output again and folds new findings back into the input's offsets
// until nothing new turns up. Each pass replaces at least one byte that is not part of a
// marker (see scanOnce), so the loop would end on its own; in practice the second pass finds
// nothing, and maxPasses only caps the cost of input built to chain reveals.
func (r *Redactor) find(b []byte) ([]Finding, []byte) {
	k := r.snapshot()
	fs := scanOnce(k, b)
	if len(fs) == 0 {
		return nil, nil
	}
	out, pos := apply(b, fs)
	for pass := 1; pass < maxPasses; pass++ {
		more := scanOnce(k, out)
		if len(more) == 0 {
			break
		}
		fs = fold(fs, pos, more)
		out, pos = apply(b, fs)
	}
	return fs, out
}

// span is a candidate finding; prio orders kinds when candidates overlap (lower wins).
type span struct {
	start, end int
	prio       int
}

func (s span) kind() string {
	if s.prio == 0 {
		return KindKnown
	}
	return rules[s.prio-1].kind
}

// scanOnce finds known values and shapes in b, drops candidates that would cut into a
// marker already in b, and merges the rest.
func scanOnce(k *known, b []byte) []Finding {
	var cands []span
	if k != nil {
		k.find(b, func(s, e int) { cands = append(cands, span{s, e, 0}) })
		k.findWrapped(b, func(s, e int) { cands = append(cands, span{s, e, 0}) })
		k.findDumps(b, func(s, e int) { cands = append(cands, span{s, e, 0}) })
		k.findInterleaved(b, func(s, e int) { cands = append(cands, span{s, e, 0}) })
	}
	findShapes(b, func(s span) { cands = append(cands, s) })
	if len(cands) == 0 {
		return nil
	}
	if ms := findMarkers(b); len(ms) > 0 {
		cands = slices.DeleteFunc(cands, func(c span) bool { return cutsMarker(c, ms) })
		if len(cands) == 0 {
			return nil
		}
	}
	return merge(cands)
}

// cutsMarker reports whether c overlaps a marker without containing it whole, or covers
// nothing but marker bytes. Such a candidate is dropped: replacing it would not shrink the
// text outside markers, so find could loop forever (a known value "]abcdef" would match
// every marker followed by "abcdef"), and the marker already hides what it replaced.
func cutsMarker(c span, ms []span) bool {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].end > c.start })
	covered := 0
	for ; i < len(ms) && ms[i].start < c.end; i++ {
		m := ms[i]
		if m.start < c.start || m.end > c.end {
			return true
		}
		covered += m.end - m.start
	}
	return covered == c.end-c.start
}

// merge sorts candidates and unions overlapping ones. Overlaps are unioned rather than the
// loser dropped: a known value inside a JWT must not leave the rest of the JWT visible.
func merge(cands []span) []Finding {
	slices.SortFunc(cands, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var fs []Finding
	cur := cands[0]
	for _, c := range cands[1:] {
		if c.start < cur.end {
			cur.end = max(cur.end, c.end)
			cur.prio = min(cur.prio, c.prio)
			continue
		}
		fs = append(fs, Finding{Kind: cur.kind(), Start: cur.start, End: cur.end})
		cur = c
	}
	return append(fs, Finding{Kind: cur.kind(), Start: cur.start, End: cur.end})
}

// apply replaces fs in b with markers. pos[i] is where fs[i]'s marker starts in out.
func apply(b []byte, fs []Finding) (out []byte, pos []int) {
	size := len(b)
	for _, f := range fs {
		size += len(marker(f.Kind)) - (f.End - f.Start)
	}
	out = make([]byte, 0, size)
	pos = make([]int, len(fs))
	last := 0
	for i, f := range fs {
		out = append(out, b[last:f.Start]...)
		pos[i] = len(out)
		out = append(out, marker(f.Kind)...)
		last = f.End
	}
	return append(out, b[last:]...), pos
}

// fold maps findings made in apply(b, prev) back to b's offsets and adds them to prev. A new
// finding never cuts into a marker (scanOnce drops those), so it either misses a previous
// finding or contains it whole, and then it replaces it.
func fold(prev []Finding, pos []int, more []Finding) []Finding {
	// orig maps an offset in the redacted text to b; inMarker picks the side of the
	// replaced finding an offset inside its marker maps to.
	orig := func(p int, end bool) int {
		q := p
		if end {
			q = p - 1
		}
		j := sort.Search(len(pos), func(i int) bool { return pos[i] > q }) - 1
		if j < 0 {
			return p
		}
		mEnd := pos[j] + len(marker(prev[j].Kind))
		if q < mEnd {
			if end {
				return prev[j].End
			}
			return prev[j].Start
		}
		return prev[j].End + (p - mEnd)
	}
	fs := make([]Finding, 0, len(prev)+len(more))
	for _, m := range more {
		fs = append(fs, Finding{Kind: m.Kind, Start: orig(m.Start, false), End: orig(m.End, true)})
	}
	// more is sorted and non-overlapping, so the mapped findings are too.
	for _, p := range prev {
		i := sort.Search(len(more), func(i int) bool { return fs[i].End > p.Start })
		if i < len(more) && fs[i].Start <= p.Start && p.End <= fs[i].End {
			continue
		}
		fs = append(fs, p)
	}
	slices.SortFunc(fs, func(a, b Finding) int { return a.Start - b.Start })
	return fs
}

// kinds lists every kind a finding may have, which is also every marker findMarkers knows.
var kinds = func() map[string]string {
	m := map[string]string{KindKnown: "[REDACTED:" + KindKnown + "]"}
	for _, r := range rules {
		m[r.kind] = "[REDACTED:" + r.kind + "]"
	}
	return m
}()

func marker(kind string) string {
	if m, ok := kinds[kind]; ok {
		return m
	}
	return "[REDACTED:" + kind + "]"
}

var markerPrefix = []byte("[REDACTED:")

// findMarkers returns the markers already in b, ours from a previous pass or not. Only the
// fixed kinds count: a lookalike such as "[REDACTED:hunter2hunter2]" must not shield the
// value inside it.
func findMarkers(b []byte) []span {
	var ms []span
	for i := 0; ; {
		j := bytes.Index(b[i:], markerPrefix)
		if j < 0 {
			return ms
		}
		s := i + j
		i = s + len(markerPrefix)
		e := bytes.IndexByte(b[i:min(len(b), i+32)], ']')
		if e < 0 {
			continue
		}
		if _, ok := kinds[string(b[i:i+e])]; ok {
			ms = append(ms, span{start: s, end: i + e + 1})
			i += e + 1
		}
	}
}
