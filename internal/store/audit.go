package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// AuditEvent is one row of the audit log, as internal/audit made it.
type AuditEvent struct {
	Seq                       int64
	Time                      time.Time
	SandboxID, TaskID, ExecID string
	// Project is the project the event is of ("": written before
	// events had one, or the daemon's own).
	Project     string
	Actor, Kind string
	Payload     []byte // canonical JSON
	Prev, Hash  string
	// Blobs are the blobs the payload refers to (AppendAudit records
	// them as the project's; not a column of the event).
	Blobs []string
}

// AuditHead returns the last event's sequence number and hash (0, "" for
// an empty log).
func (s *Store) AuditHead(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	err := s.w.QueryRowContext(ctx, `SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("store: audit head: %w", err)
	}
	return seq, hash, nil
}

// AppendAudit writes events and blobs in one transaction. A blob already
// stored is kept (same hash, same content).
func (s *Store) AppendAudit(ctx context.Context, events []*AuditEvent, blobs map[string][]byte) error {
	s.auditOnce.Do(func() {
		s.auditInsert, s.auditErr = s.w.PrepareContext(context.Background(), `INSERT INTO audit_events
			(seq, time, sandbox_id, task_id, exec_id, actor, kind, payload, prev, hash, project) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	})
	if s.auditErr != nil {
		return fmt.Errorf("store: audit: %w", classify(s.auditErr))
	}
	insert := func(stmt *sql.Stmt, e *AuditEvent) error {
		if _, err := stmt.ExecContext(ctx, e.Seq, e.Time.UnixNano(), e.SandboxID, e.TaskID, e.ExecID, e.Actor, e.Kind, string(e.Payload), e.Prev, e.Hash, e.Project); err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("store: audit event %d already exists: %w", e.Seq, errdefs.ErrConflict)
			}
			return fmt.Errorf("store: audit event %d: %w", e.Seq, classify(err))
		}
		return nil
	}
	if len(events) == 1 && len(blobs) == 0 && len(events[0].Blobs) == 0 {
		return insert(s.auditInsert, events[0]) // one statement is its own transaction
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: audit: %w", classify(err))
	}
	defer rollback(tx)
	now := time.Now().UnixNano()
	for h, data := range blobs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_blobs (hash, data, created) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`, h, data, now); err != nil {
			return fmt.Errorf("store: audit blob: %w", classify(err))
		}
	}
	stmt := tx.StmtContext(ctx, s.auditInsert)
	for _, e := range events {
		if err := insert(stmt, e); err != nil {
			return err
		}
		for _, h := range e.Blobs {
			if e.Project == "" {
				break
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO audit_blob_refs (hash, project) VALUES (?, ?) ON CONFLICT DO NOTHING`, h, e.Project); err != nil {
				return fmt.Errorf("store: audit blob reference: %w", classify(err))
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: audit: %w", classify(err))
	}
	return nil
}

// AuditFilter selects events; zero fields select everything.
type AuditFilter struct {
	SandboxID, TaskID, ExecID, Kind string
	// Project selects a project's events: those stamped with it, and
	// those written before events had a project that name a sandbox of
	// it (an event of neither kind is the operator's only).
	Project string
	// Contains selects events whose payload holds this text.
	Contains string
	// Unstamped selects the events written before events had a project
	// (with Project: those naming a sandbox of it).
	Unstamped    bool
	Since, Until time.Time
	AfterSeq     int64
	Limit        int
}

// AuditEvents returns events in sequence order.
func (s *Store) AuditEvents(ctx context.Context, f AuditFilter) ([]*AuditEvent, error) {
	q := `SELECT seq, time, sandbox_id, task_id, exec_id, actor, kind, payload, prev, hash, project FROM audit_events WHERE seq > ?`
	args := []any{f.AfterSeq}
	add := func(cond string, v any) { q += " AND " + cond; args = append(args, v) }
	if f.SandboxID != "" {
		add("sandbox_id = ?", f.SandboxID)
	}
	if f.TaskID != "" {
		add("task_id = ?", f.TaskID)
	}
	if f.ExecID != "" {
		add("exec_id = ?", f.ExecID)
	}
	switch {
	case f.Project != "" && f.Unstamped:
		add("project = '' AND sandbox_id <> '' AND sandbox_id IN (SELECT id FROM sandboxes WHERE project = ?)", f.Project)
	case f.Project != "":
		add("(project = ? OR (project = '' AND sandbox_id <> '' AND sandbox_id IN (SELECT id FROM sandboxes WHERE project = ?)))", f.Project)
		args = append(args, f.Project)
	case f.Unstamped:
		q += " AND project = ''"
	}
	if f.Contains != "" {
		add("instr(payload, ?) > 0", f.Contains)
	}
	if f.Kind != "" {
		add("(kind = ? OR kind LIKE ? ESCAPE '\\')", f.Kind)
		args = append(args, escapeLike(f.Kind)+".%")
	}
	if !f.Since.IsZero() {
		add("time >= ?", f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		add("time < ?", f.Until.UnixNano())
	}
	q += " ORDER BY seq"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: audit events: %w", err)
	}
	defer rows.Close()
	out := []*AuditEvent{}
	for rows.Next() {
		var e AuditEvent
		var t int64
		var payload string
		if err := rows.Scan(&e.Seq, &t, &e.SandboxID, &e.TaskID, &e.ExecID, &e.Actor, &e.Kind, &payload, &e.Prev, &e.Hash, &e.Project); err != nil {
			return nil, err
		}
		e.Time, e.Payload = fromNanos(t), []byte(payload)
		out = append(out, &e)
	}
	return out, rows.Err()
}

func escapeLike(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '_' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// AuditBlob returns a blob by its hash (ErrNotFound if absent).
func (s *Store) AuditBlob(ctx context.Context, hash string) ([]byte, error) {
	var data []byte
	err := s.r.QueryRowContext(ctx, `SELECT data FROM audit_blobs WHERE hash = ?`, hash).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: audit blob %s: %w", hash, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: audit blob: %w", err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// AuditBlobReferenced says whether an event of project written since
// events had a project refers to blob hash.
func (s *Store) AuditBlobReferenced(ctx context.Context, project, hash string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM audit_blob_refs WHERE hash = ? AND project = ?`, hash, project).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: audit blob reference: %w", err)
	}
	return true, nil
}

// PurgeAuditBlobs deletes blobs stored before t and returns how many.
// Events keep their references; verification then reports those blobs as
// purged, not as tampered with, when a purge event covers them.
func (s *Store) PurgeAuditBlobs(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM audit_blobs WHERE created < ?`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("store: purge blobs: %w", classify(err))
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// PurgeOutputs deletes the stored output of execs that ended before t.
func (s *Store) PurgeOutputs(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM outputs WHERE exec_id IN (SELECT id FROM execs WHERE ended IS NOT NULL AND ended < ?)`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("store: purge outputs: %w", classify(err))
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// TasksFinishedBefore lists the ids of tasks that finished before t.
func (s *Store) TasksFinishedBefore(ctx context.Context, t time.Time) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM tasks WHERE finished IS NOT NULL AND finished < ? ORDER BY id`, t.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("store: tasks: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
