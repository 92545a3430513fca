// Package audit is airlock's tamper-evident record: append-only events,
// each hashed over a canonical encoding together with the previous
// event's hash, large payloads as content-addressed blobs, and redaction
// before anything is written. Verify recomputes the chain; the daemon's
// ed25519 key signs chain heads for review bundles. Only the daemon
// (internal/manager, internal/api, cmd/airlock) writes to it.
package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// Redactor removes secrets before anything is written (internal/redact).
type Redactor interface {
	Redact(b []byte) ([]byte, bool)
	JSON(doc []byte) []byte
}

// Event is one thing that happened.
type Event struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	SandboxID string    `json:"sandbox,omitempty"`
	TaskID    string    `json:"task,omitempty"`
	ExecID    string    `json:"exec,omitempty"`
	// Project is the project the event is of: its sandbox's, else the
	// requester's; "" for the daemon's own and for events written before
	// events had a project (their hash does not cover one).
	Project string          `json:"project,omitempty"`
	Actor   string          `json:"actor"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
	Prev    string          `json:"prev"`
	Hash    string          `json:"hash"`
}

// BlobRef is how a payload names a blob.
func BlobRef(hash string) string { return "blob:sha256:" + hash }

// Canonical is the encoding an event's hash is computed over: its fields
// in a fixed order, the payload re-encoded with sorted keys and no
// insignificant space, the time as UTC nanoseconds. The project is in it
// when it is not "": the events written before events had a project keep
// the encoding (and hash) they were written with, and a project added to
// one, changed or taken off a later one changes the hash.
func Canonical(e *Event) ([]byte, error) {
	payload, err := canonicalJSON(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("audit: payload of event %d: %w", e.Seq, err)
	}
	var b bytes.Buffer
	b.WriteString(`{"seq":`)
	b.WriteString(strconv.FormatInt(e.Seq, 10))
	b.WriteString(`,"time":`)
	b.WriteString(strconv.FormatInt(e.Time.UnixNano(), 10))
	fields := [][2]string{{"sandbox", e.SandboxID}, {"task", e.TaskID}, {"exec", e.ExecID}, {"actor", e.Actor}, {"kind", e.Kind}}
	if e.Project != "" {
		fields = append(fields, [2]string{"project", e.Project})
	}
	for _, f := range fields {
		s, _ := json.Marshal(f[1])
		b.WriteString(`,"` + f[0] + `":`)
		b.Write(s)
	}
	b.WriteString(`,"payload":`)
	b.Write(payload)
	prev, _ := json.Marshal(e.Prev)
	b.WriteString(`,"prev":`)
	b.Write(prev)
	b.WriteByte('}')
	return b.Bytes(), nil
}

func canonicalJSON(raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// HashOf is an event's hash: SHA-256 of its canonical encoding (which
// includes the previous hash), hex.
func HashOf(e *Event) (string, error) {
	c, err := Canonical(e)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// MaxInline is the largest payload string kept inline; larger byte
// payloads (Blob) become blobs.
const MaxInline = 4 << 10

// Blob marks payload data to be stored as a content-addressed blob; in
// the event it becomes {"blob":"blob:sha256:...","bytes":N} (or the text
// itself when short).
type Blob []byte

// MarshalJSON is only used if a Blob reaches encoding without Record.
func (b Blob) MarshalJSON() ([]byte, error) { return json.Marshal(string(b)) }

// Log appends events. It is safe for concurrent use: concurrent Records
// share one transaction (group commit).
type Log struct {
	st         *store.Store
	checkpoint string // Config.CheckpointFile
	red        Redactor
	key        ed25519.PrivateKey
	now        func() time.Time
	projects   projectCache

	// async tracks RecordAsync calls in flight: readers wait for those
	// begun before them, so what was recorded is what they see.
	async inflight

	mu sync.Mutex
	// seq and head are the chain's end as assigned (events in flight
	// included); cseq and chash the end that is in the database.
	seq, cseq   int64
	head, chash string
	queue       []*pending
	writing     bool
	failed      error
	out         outage // while failed

	// signedSeq is the head the last checkpoint signed; periodic, when
	// set, is told as the unsigned tail grows (StartCheckpoints).
	signedSeq int64
	periodic  *periodic
	// ckMu orders checkpoints: each file is written before the next
	// checkpoint event is recorded, which verification relies on.
	ckMu sync.Mutex

	// reserve is the space kept for the events that must be written on
	// a full disk (RecordEssential); essMu serializes its use and Recover.
	reserve reserve
	essMu   sync.Mutex
}

type pending struct {
	ev    *store.AuditEvent
	blobs map[string][]byte
	done  chan error
}

// Config wires a Log.
type Config struct {
	Store *store.Store
	// Redactor runs over every payload and blob before it is written.
	Redactor Redactor
	// KeyFile holds the daemon's ed25519 signing key (made on first use,
	// mode 0600); "": an in-memory key (tests).
	KeyFile string
	Now     func() time.Time
	// ReserveFile is a file of ReserveBytes (default DefaultReserve)
	// kept allocated on the log's disk and given up when the disk is
	// full, so that RecordEssential can still write; "": none.
	ReserveFile  string
	ReserveBytes int64
	// CheckpointFile is the file the daemon keeps the log's signed head
	// in ("": none); Verify checks against it and then moves it.
	CheckpointFile string
}

// Open loads the chain head and the signing key.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	if cfg.Store == nil || cfg.Redactor == nil {
		return nil, fmt.Errorf("audit: store and redactor are required: %w", errdefs.ErrInvalid)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	key, err := loadKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	seq, head, err := cfg.Store.AuditHead(ctx)
	if err != nil {
		return nil, err
	}
	l := &Log{st: cfg.Store, checkpoint: cfg.CheckpointFile, red: cfg.Redactor, key: key, now: cfg.Now, projects: projectCache{st: cfg.Store}, seq: seq, head: head, cseq: seq, chash: head,
		reserve: reserve{path: cfg.ReserveFile, size: cfg.ReserveBytes}}
	if l.reserve.size <= 0 {
		l.reserve.size = DefaultReserve
	}
	if err := l.reserve.ensure(); err != nil {
		return nil, err
	}
	return l, nil
}

func loadKey(path string) (ed25519.PrivateKey, error) {
	if path == "" {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	seed, err := os.ReadFile(path)
	if err == nil {
		if len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("audit: key file %s: want a %d-byte ed25519 seed", path, ed25519.SeedSize)
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("audit: key file: %w", err)
	}
	seed = make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: make key file: %w", err)
	}
	if _, err := f.Write(seed); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// PublicKey is the daemon's verification key.
func (l *Log) PublicKey() ed25519.PublicKey { return l.key.Public().(ed25519.PublicKey) }

// Sign signs msg with the daemon's key.
func (l *Log) Sign(msg []byte) []byte { return ed25519.Sign(l.key, msg) }

// RecordAsync records an event without waiting for it: for events that
// come after the fact (an exec's end), off the caller's critical path. A
// failure stops the log like any other (Err); Query, Head and Checkpoint
// wait for these writes first.
func (l *Log) RecordAsync(ctx context.Context, in Entry, done func(error)) {
	ticket := l.async.add()
	go func() {
		defer l.async.done(ticket)
		_, err := l.Record(context.WithoutCancel(ctx), in)
		if done != nil {
			done(err)
		}
	}()
}

// Flush waits for every RecordAsync so far.
func (l *Log) Flush() { l.async.wait() }

// Head returns the last written event's sequence number and hash.
func (l *Log) Head() (int64, string) {
	l.async.wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cseq, l.chash // written, not only assigned: others may be in flight
}

// Err is the error that stopped the log, if any: once a write failed the
// log takes nothing more, and callers must fail closed.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Entry is what a caller records; Record fills in the rest.
type Entry struct {
	SandboxID, TaskID, ExecID string
	// Project "": the sandbox's project, else the project of the
	// request's principal (tenant.Of; "" for the operator and the
	// daemon itself).
	Project     string
	Actor, Kind string
	// Payload is encoded as JSON after redaction; Blob values inside a
	// map[string]any payload become blobs.
	Payload any
}

// Record redacts, chains and writes one event, and returns once it is
// durable (in the database's WAL).
func (l *Log) Record(ctx context.Context, in Entry) (*Event, error) {
	ev, blobs, err := l.prepare(ctx, in)
	if err != nil {
		return nil, err
	}

	l.mu.Lock()
	if l.failed != nil {
		err := l.failed
		l.out.refused++
		l.mu.Unlock()
		return nil, fmt.Errorf("audit log stopped after a failed write: %w", err)
	}
	ev.Seq, ev.Prev, ev.Time = l.seq+1, l.head, l.now().UTC()
	if ev.Hash, err = HashOf(ev); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	l.seq, l.head = ev.Seq, ev.Hash
	p := &pending{ev: &store.AuditEvent{Seq: ev.Seq, Time: ev.Time, SandboxID: ev.SandboxID, TaskID: ev.TaskID, ExecID: ev.ExecID,
		Project: ev.Project, Actor: ev.Actor, Kind: ev.Kind, Payload: ev.Payload, Prev: ev.Prev, Hash: ev.Hash, Blobs: blobHashes(blobs)},
		blobs: blobs, done: make(chan error, 1)}
	l.queue = append(l.queue, p)
	if l.writing {
		l.mu.Unlock()
		return ev, <-p.done
	}
	l.writing = true
	for len(l.queue) > 0 {
		batch := l.queue
		l.queue = nil
		l.mu.Unlock()
		var evs []*store.AuditEvent
		all := map[string][]byte{}
		for _, q := range batch {
			evs = append(evs, q.ev)
			for h, d := range q.blobs {
				all[h] = d
			}
		}
		werr := l.st.AppendAudit(context.WithoutCancel(ctx), evs, all)
		l.mu.Lock()
		if werr != nil && l.failed == nil {
			l.failed = werr
			l.out = outage{since: l.now().UTC(), refused: int64(len(batch))}
		}
		if werr == nil {
			last := evs[len(evs)-1]
			l.cseq, l.chash = last.Seq, last.Hash
			l.kickLocked()
		}
		for _, q := range batch {
			q.done <- werr
		}
		if werr != nil {
			// Nothing queued after a failure can join the chain.
			for _, q := range l.queue {
				q.done <- fmt.Errorf("audit log stopped after a failed write: %w", werr)
				l.out.refused++
			}
			l.queue = nil
		}
	}
	l.writing = false
	l.mu.Unlock()
	return ev, <-p.done
}

// blobify replaces Blob values (at the top level of a payload) by blob
// references after redacting them.
func (l *Log) blobify(m map[string]any, blobs map[string][]byte) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		b, ok := v.(Blob)
		if !ok {
			out[k] = v
			continue
		}
		data, _ := l.red.Redact(b)
		if len(data) <= MaxInline {
			out[k] = string(data)
			continue
		}
		sum := sha256.Sum256(data)
		h := hex.EncodeToString(sum[:])
		blobs[h] = data
		out[k] = map[string]any{"blob": BlobRef(h), "bytes": len(data)}
	}
	return out
}

func fromRow(r *store.AuditEvent) *Event {
	return &Event{Seq: r.Seq, Time: r.Time, SandboxID: r.SandboxID, TaskID: r.TaskID, ExecID: r.ExecID, Project: r.Project, Actor: r.Actor, Kind: r.Kind,
		Payload: json.RawMessage(r.Payload), Prev: r.Prev, Hash: r.Hash}
}

// inflight counts calls in flight, and waits for the ones begun before the
// wait only (a sync.WaitGroup may not be added to while it is waited on,
// and under steady load would never reach zero).
type inflight struct {
	mu   sync.Mutex
	cond *sync.Cond
	next uint64
	open map[uint64]struct{}
}

func (f *inflight) add() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		f.open = map[uint64]struct{}{}
		f.cond = sync.NewCond(&f.mu)
	}
	f.next++
	f.open[f.next] = struct{}{}
	return f.next
}

func (f *inflight) done(t uint64) {
	f.mu.Lock()
	delete(f.open, t)
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *inflight) wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	upTo := f.next
	for {
		pending := false
		for t := range f.open {
			if t <= upTo {
				pending = true
				break
			}
		}
		if !pending {
			return
		}
		f.cond.Wait()
	}
}
