package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
	"golang.org/x/sys/unix"
)

// A write that fails stops the log (Err): callers fail closed. Two things
// keep that from being the end of the record:
//
//   - Recover, called periodically by the daemon, tries again: it first
//     takes back the reserve, then writes an audit.recovered event saying
//     when the log stopped, why, and how many events were refused
//     meanwhile; once that is written the log takes events again.
//   - RecordEssential writes the events that must be on the record even
//     on a full disk (a sandbox destroyed, the daemon stopping): it gives
//     up the reserve, and writes an audit.outage event (once per outage)
//     before them. The log stays stopped for every other event.

// DefaultReserve is the space kept for essential events: a few thousand
// sandbox-stop events, each a WAL page or two.
const DefaultReserve = 8 << 20

// outage is what happened since the log stopped.
type outage struct {
	since   time.Time
	refused int64 // events not written
	noted   bool  // its audit.outage event is written
}

// prepare redacts and encodes an entry; Seq, Prev, Time and Hash are set
// when it joins the chain.
func (l *Log) prepare(ctx context.Context, in Entry) (*Event, map[string][]byte, error) {
	if in.Kind == "" {
		return nil, nil, fmt.Errorf("audit: an event needs a kind: %w", errdefs.ErrInvalid)
	}
	if in.Actor == "" {
		in.Actor = "airlock"
	}
	blobs := map[string][]byte{}
	payload := in.Payload
	if m, ok := payload.(map[string]any); ok {
		payload = l.blobify(m, blobs)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: payload: %w", err)
	}
	canon, err := canonicalJSON(l.red.JSON(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("audit: payload: %w", err)
	}
	if in.Project == "" {
		in.Project = l.projects.of(ctx, in.SandboxID)
	}
	return &Event{SandboxID: in.SandboxID, TaskID: in.TaskID, ExecID: in.ExecID, Project: in.Project, Actor: in.Actor, Kind: in.Kind, Payload: canon}, blobs, nil
}

// takeWriter waits until no group commit is under way and marks one, so
// that a stopped log's chain can be continued by Recover or
// RecordEssential alone. It returns false if the log is not stopped.
func (l *Log) takeWriter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.writing {
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
		l.mu.Lock()
	}
	if l.failed == nil {
		return false
	}
	l.writing = true
	return true
}

func (l *Log) releaseWriter() {
	l.mu.Lock()
	l.writing = false
	l.mu.Unlock()
}

// appendStopped writes entries after the database's own head (the events
// of the failed batch were rolled back with it) while the log is stopped
// and this caller holds the writer mark. On success the chain moves on.
func (l *Log) appendStopped(ctx context.Context, ins ...Entry) ([]*Event, error) {
	seq, head, err := l.st.AuditHead(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	cseq, chash := l.cseq, l.chash
	l.mu.Unlock()
	if seq != cseq || head != chash {
		// Not a full disk: someone else wrote or removed events. The log
		// is not continued over them.
		return nil, fmt.Errorf("audit: the database's last event is %d, not the %d this daemon wrote: the log was changed under it, restart to verify", seq, cseq)
	}
	var rows []*Event
	var refs [][]string // each row's blobs
	all := map[string][]byte{}
	for _, in := range ins {
		ev, blobs, err := l.prepare(ctx, in)
		if err != nil {
			return nil, err
		}
		seq++
		ev.Seq, ev.Prev, ev.Time = seq, head, l.now().UTC()
		if ev.Hash, err = HashOf(ev); err != nil {
			return nil, err
		}
		head = ev.Hash
		rows = append(rows, ev)
		refs = append(refs, blobHashes(blobs))
		for h, d := range blobs {
			all[h] = d
		}
	}
	srows := toRows(rows)
	for i := range srows {
		srows[i].Blobs = refs[i]
	}
	if err := l.st.AppendAudit(context.WithoutCancel(ctx), srows, all); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.seq, l.head, l.cseq, l.chash = seq, head, seq, head
	l.mu.Unlock()
	return rows, nil
}

// outageEntry describes the outage so far.
func (l *Log) outageEntry(kind string) Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := map[string]any{"since": l.out.since, "error": l.failed.Error(), "refused_events": l.out.refused}
	if kind == "audit.recovered" {
		p["down_seconds"] = l.now().Sub(l.out.since).Seconds()
	}
	return Entry{Kind: kind, Payload: p}
}

// Recover tries to end a stop: it takes back the reserve and writes an
// audit.recovered event; once that is written, the log takes events
// again. nil if the log was not stopped or is running again.
func (l *Log) Recover(ctx context.Context) error {
	l.essMu.Lock()
	defer l.essMu.Unlock()
	if !l.takeWriter() {
		return nil
	}
	err := l.reserve.ensure()
	if err == nil {
		err = l.reserve.room()
	}
	if err != nil {
		l.releaseWriter()
		return err
	}
	if _, err := l.appendStopped(ctx, l.outageEntry("audit.recovered")); err != nil {
		l.releaseWriter()
		return fmt.Errorf("audit: still cannot write: %w", err)
	}
	// Running again and the writer mark given back at once: a Record in
	// between would queue behind a writer that is not there.
	l.mu.Lock()
	l.failed, l.out, l.writing = nil, outage{}, false
	l.mu.Unlock()
	return nil
}

// RecordEssential records an event that must be on the record even when
// the log has stopped (a full disk): a sandbox destroyed, the daemon
// stopping. On a stopped log it gives up the reserve to make room, and
// writes an audit.outage event first (once per outage); the log stays
// stopped for other events until Recover.
func (l *Log) RecordEssential(ctx context.Context, in Entry) (*Event, error) {
	if l.Err() == nil {
		ev, err := l.Record(ctx, in)
		if err == nil || l.Err() == nil {
			return ev, err
		}
	}
	l.essMu.Lock()
	defer l.essMu.Unlock()
	if !l.takeWriter() {
		return l.Record(ctx, in) // recovered meanwhile
	}
	defer l.releaseWriter()
	l.reserve.release()
	l.mu.Lock()
	noted := l.out.noted
	l.mu.Unlock()
	ins := []Entry{in}
	if !noted {
		ins = []Entry{l.outageEntry("audit.outage"), in}
	}
	evs, err := l.appendStopped(ctx, ins...)
	if err != nil {
		return nil, fmt.Errorf("audit: essential event %s not written, even with the reserve given up: %w", in.Kind, err)
	}
	l.mu.Lock()
	l.out.noted = true
	l.mu.Unlock()
	return evs[len(evs)-1], nil
}

// reserve is a file kept allocated on the log's disk.
type reserve struct {
	path string
	size int64
}

// ensure (re)makes the file at its full size; on failure (the disk is
// still full) none is left half made.
func (r *reserve) ensure() error {
	if r.path == "" {
		return nil
	}
	if st, err := os.Stat(r.path); err == nil && st.Size() >= r.size {
		return nil
	}
	tmp := r.path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("audit: reserve: %w", err)
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, r.size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = writeZeros(f, r.size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, r.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("audit: reserve %d bytes in %s: %w", r.size, r.path, err)
	}
	return nil
}

func writeZeros(f *os.File, n int64) error {
	buf := make([]byte, 64<<10)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// room fails unless the disk has another reserve's worth free: a log
// that runs again at the disk's last bytes (the database can often fit
// a small event into pages it already has) would only stop again.
func (r *reserve) room() error {
	if r.path == "" {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(r.path), &st); err != nil {
		return fmt.Errorf("audit: free space: %w", err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < r.size {
		return fmt.Errorf("audit: %d bytes free on the log's disk, want at least %d: %w", free, r.size, unix.ENOSPC)
	}
	return nil
}

// release gives the reserve's space back to the disk.
func (r *reserve) release() {
	if r.path != "" {
		os.Remove(r.path)
	}
}

func toRows(evs []*Event) []*store.AuditEvent {
	out := make([]*store.AuditEvent, len(evs))
	for i, ev := range evs {
		out[i] = &store.AuditEvent{Seq: ev.Seq, Time: ev.Time, SandboxID: ev.SandboxID, TaskID: ev.TaskID, ExecID: ev.ExecID,
			Project: ev.Project, Actor: ev.Actor, Kind: ev.Kind, Payload: ev.Payload, Prev: ev.Prev, Hash: ev.Hash}
	}
	return out
}
