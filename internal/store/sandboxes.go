package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Sandbox is one sandbox's record. Records are never deleted: a destroyed
// sandbox stays, in state "stopped".
type Sandbox struct {
	ID, State, Backend, Template, TemplateVersion string
	// Labels: nil and empty both round-trip as themselves.
	Labels map[string]string
	// Spec (limits, env names...) and Isolation are the caller's JSON,
	// stored verbatim; it must be valid JSON. Empty reads back as nil.
	Spec      json.RawMessage
	Isolation json.RawMessage
	// Times are stored with nanoseconds and read back in UTC.
	Created    time.Time
	Expires    *time.Time // nil: no TTL
	Stopped    *time.Time // nil: not stopped
	StopReason string
	// Project owns the sandbox (PutSandbox sets "" to DefaultProject). It is fixed
	// at put: UpdateSandbox never changes it.
	Project string
}

const (
	insertSandbox = `INSERT INTO sandboxes
	(id, state, backend, template, template_version, labels, spec, isolation, created, expires, stopped, stop_reason, project)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	updateSandbox = `UPDATE sandboxes SET
	state = ?, backend = ?, template = ?, template_version = ?, labels = ?, spec = ?, isolation = ?,
	created = ?, expires = ?, stopped = ?, stop_reason = ?
	WHERE id = ?`
	selectSandbox = `SELECT
	id, state, backend, template, template_version, labels, spec, isolation, created, expires, stopped, stop_reason, project
	FROM sandboxes WHERE id = ?`
	// listSandboxes: ?1 a state or "", ?2 a project or "" (every one).
	listSandboxes = `SELECT
	id, state, backend, template, template_version, labels, spec, isolation, created, expires, stopped, stop_reason, project
	FROM sandboxes WHERE (?1 = '' OR state = ?1) AND (?2 = '' OR project = ?2) ORDER BY created DESC, id`
)

// sandboxValues validates sb and returns its column values, in the column
// order of insertSandbox.
func sandboxValues(sb *Sandbox) ([]any, error) {
	if sb == nil {
		return nil, invalidf("nil sandbox")
	}
	if err := checkID("sandbox", sb.ID); err != nil {
		return nil, err
	}
	if sb.State == "" {
		return nil, invalidf("sandbox %q: empty state", sb.ID)
	}
	labels, err := labelsJSON(sb.Labels)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", sb.ID, err)
	}
	spec, err := rawJSON("spec", sb.Spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", sb.ID, err)
	}
	iso, err := rawJSON("isolation", sb.Isolation)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", sb.ID, err)
	}
	created, err := nanos("created", sb.Created)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", sb.ID, err)
	}
	expires, err := optNanos("expires", sb.Expires)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", sb.ID, err)
	}
	stopped, err := optNanos("stopped", sb.Stopped)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", sb.ID, err)
	}
	return []any{sb.ID, sb.State, sb.Backend, sb.Template, sb.TemplateVersion,
		labels, spec, iso, created, expires, stopped, sb.StopReason}, nil
}

// PutSandbox inserts a new sandbox record; a duplicate id is ErrConflict,
// a project that does not exist ErrNotFound.
func (s *Store) PutSandbox(ctx context.Context, sb *Sandbox) error {
	vals, err := sandboxValues(sb)
	if err != nil {
		return fmt.Errorf("store: put sandbox: %w", err)
	}
	if sb.Project == "" {
		sb.Project = DefaultProject
	}
	if _, err := s.w.ExecContext(ctx, insertSandbox, append(vals, sb.Project)...); err != nil {
		if isNoProject(err) {
			return fmt.Errorf("store: project %q: %w", sb.Project, errdefs.ErrNotFound)
		}
		if isDuplicate(err) {
			return fmt.Errorf("store: sandbox %q already exists: %w", sb.ID, errdefs.ErrConflict)
		}
		return fmt.Errorf("store: put sandbox %q: %w", sb.ID, err)
	}
	return nil
}

// UpdateSandbox replaces every field of the record with sb.ID; an unknown id
// is ErrNotFound.
func (s *Store) UpdateSandbox(ctx context.Context, sb *Sandbox) error {
	vals, err := sandboxValues(sb)
	if err != nil {
		return fmt.Errorf("store: update sandbox: %w", err)
	}
	// Same values, with the id moved last for the WHERE clause.
	res, err := s.w.ExecContext(ctx, updateSandbox, append(vals[1:], vals[0])...)
	if err != nil {
		return fmt.Errorf("store: update sandbox %q: %w", sb.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: update sandbox %q: %w", sb.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("store: sandbox %q: %w", sb.ID, errdefs.ErrNotFound)
	}
	return nil
}

// GetSandbox returns the record with id; an unknown id is ErrNotFound.
func (s *Store) GetSandbox(ctx context.Context, id string) (*Sandbox, error) {
	if err := checkID("sandbox", id); err != nil {
		return nil, fmt.Errorf("store: get sandbox: %w", err)
	}
	sb, err := scanSandbox(s.r.QueryRowContext(ctx, selectSandbox, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: sandbox %q: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get sandbox %q: %w", id, err)
	}
	return sb, nil
}

// ListSandboxes returns the sandboxes in state (all of them for ""), newest
// first: by created descending, then by id. The slice is empty, not nil, when
// there are none.
func (s *Store) ListSandboxes(ctx context.Context, state string) ([]*Sandbox, error) {
	return s.ListProjectSandboxes(ctx, state, "")
}

// ListProjectSandboxes is ListSandboxes of one project's sandboxes
// (project "": every project's).
func (s *Store) ListProjectSandboxes(ctx context.Context, state, project string) ([]*Sandbox, error) {
	rows, err := s.r.QueryContext(ctx, listSandboxes, state, project)
	if err != nil {
		return nil, fmt.Errorf("store: list sandboxes: %w", err)
	}
	defer rows.Close()
	out := []*Sandbox{}
	for rows.Next() {
		sb, err := scanSandbox(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list sandboxes: %w", err)
		}
		out = append(out, sb)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list sandboxes: %w", err)
	}
	return out, nil
}

// MarkRunningStopped sets every sandbox not yet "stopped" (running or
// paused) to "stopped" with the given reason and time (used when a daemon
// starts after a crash: those sandboxes died with it). Returns the ids,
// newest first, in one transaction.
func (s *Store) MarkRunningStopped(ctx context.Context, reason string, at time.Time) (ids []string, err error) {
	if reason == "" {
		return nil, fmt.Errorf("store: mark running stopped: %w", invalidf("empty reason"))
	}
	n, err := nanos("stopped", at)
	if err != nil {
		return nil, fmt.Errorf("store: mark running stopped: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: mark running stopped: %w", err)
	}
	defer func() {
		if err != nil {
			rollback(tx)
		}
	}()
	rows, err := tx.QueryContext(ctx,
		`SELECT id FROM sandboxes WHERE state != ? ORDER BY created DESC, id`, StateStopped)
	if err != nil {
		return nil, fmt.Errorf("store: mark running stopped: %w", err)
	}
	ids = []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: mark running stopped: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: mark running stopped: %w", err)
	}
	if _, err := tx.ExecContext(ctx,
		`UPDATE sandboxes SET state = ?, stopped = ?, stop_reason = ? WHERE state != ?`,
		StateStopped, n, reason, StateStopped); err != nil {
		return nil, fmt.Errorf("store: mark running stopped: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: mark running stopped: %w", err)
	}
	return ids, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanSandbox(sc scanner) (*Sandbox, error) {
	var (
		sb                Sandbox
		labels, spec, iso []byte
		created           int64
		expires, stopped  sql.NullInt64
	)
	if err := sc.Scan(&sb.ID, &sb.State, &sb.Backend, &sb.Template, &sb.TemplateVersion,
		&labels, &spec, &iso, &created, &expires, &stopped, &sb.StopReason, &sb.Project); err != nil {
		return nil, err
	}
	var err error
	if sb.Labels, err = fromLabelsJSON(labels); err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", sb.ID, err)
	}
	sb.Spec, sb.Isolation = toRaw(spec), toRaw(iso)
	sb.Created = fromNanos(created)
	sb.Expires, sb.Stopped = fromOptNanos(expires), fromOptNanos(stopped)
	return &sb, nil
}
