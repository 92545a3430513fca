package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// DefaultProject is the project a database's records made before projects
// belong to (tenant.Default; the store does not import tenant).
const DefaultProject = "default"

// ProjectsVersion is the schema version that brought projects: a
// database opened at an earlier one (OpenedAt) was upgraded into the
// default project.
const ProjectsVersion = 8

// Project is a tenant's record. Quotas is the caller's JSON, verbatim.
type Project struct {
	ID      string
	Created time.Time
	Removed *time.Time // nil: in use
	Quotas  json.RawMessage
	// Policy is the project's own policy layer (the caller's JSON,
	// verbatim; nil: none), schema 10.
	Policy json.RawMessage
	// Settings are the project's settings (the caller's JSON, verbatim;
	// nil: none), schema 10.
	Settings json.RawMessage
}

// isNoProject says whether err is the triggers' refusal of a project
// that does not exist (or was removed).
func isNoProject(err error) bool {
	return err != nil && strings.Contains(err.Error(), "airlock: no such project")
}

// PutProject records a new project; a name in use (or once used) is
// ErrConflict.
func (s *Store) PutProject(ctx context.Context, p *Project) error {
	if p == nil {
		return fmt.Errorf("store: put project: %w", invalidf("nil project"))
	}
	if err := checkID("project", p.ID); err != nil {
		return fmt.Errorf("store: put project: %w", err)
	}
	created, err := nanos("created", p.Created)
	if err != nil {
		return fmt.Errorf("store: put project: %w", err)
	}
	q, err := rawJSON("quotas", p.Quotas)
	if err != nil {
		return fmt.Errorf("store: put project: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO projects (id, created, quotas) VALUES (?, ?, ?)`, p.ID, created, q); err != nil {
		if isDuplicate(err) {
			return fmt.Errorf("store: project %q already exists (a removed project's name is not reused): %w", p.ID, errdefs.ErrConflict)
		}
		return fmt.Errorf("store: put project: %w", err)
	}
	return nil
}

const selectProject = `SELECT id, created, removed, quotas, policy, settings FROM projects`

func scanProject(sc scanner) (*Project, error) {
	var p Project
	var created int64
	var removed sql.NullInt64
	var q, pol, set []byte
	if err := sc.Scan(&p.ID, &created, &removed, &q, &pol, &set); err != nil {
		return nil, err
	}
	p.Created, p.Removed, p.Quotas, p.Policy, p.Settings = fromNanos(created), fromOptNanos(removed), toRaw(q), toRaw(pol), toRaw(set)
	return &p, nil
}

// GetProject is project id, removed or not (ErrNotFound if it never was).
func (s *Store) GetProject(ctx context.Context, id string) (*Project, error) {
	p, err := scanProject(s.r.QueryRowContext(ctx, selectProject+` WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: project %q: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: project %q: %w", id, err)
	}
	return p, nil
}

// ListProjects lists the projects, removed ones too, by name.
func (s *Store) ListProjects(ctx context.Context) ([]*Project, error) {
	rows, err := s.r.QueryContext(ctx, selectProject+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: list projects: %w", err)
	}
	defer rows.Close()
	out := []*Project{}
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list projects: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// SetProjectQuotas replaces a project's quotas (ErrNotFound: no such
// project in use).
func (s *Store) SetProjectQuotas(ctx context.Context, id string, quotas json.RawMessage) error {
	q, err := rawJSON("quotas", quotas)
	if err != nil {
		return fmt.Errorf("store: set quotas: %w", err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE projects SET quotas = ? WHERE id = ? AND removed IS NULL`, q, id)
	if err != nil {
		return fmt.Errorf("store: set quotas of %q: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: project %q: %w", id, errdefs.ErrNotFound)
	}
	return nil
}

// SetProjectPolicy replaces a project's policy layer (nil: none;
// ErrNotFound: no such project in use).
func (s *Store) SetProjectPolicy(ctx context.Context, id string, layer json.RawMessage) error {
	return s.setProjectJSON(ctx, id, "policy", layer)
}

// SetProjectSettings replaces a project's settings (nil: none;
// ErrNotFound: no such project in use).
func (s *Store) SetProjectSettings(ctx context.Context, id string, settings json.RawMessage) error {
	return s.setProjectJSON(ctx, id, "settings", settings)
}

// setProjectJSON sets column (a constant of the callers', never input)
// of project id.
func (s *Store) setProjectJSON(ctx context.Context, id, column string, raw json.RawMessage) error {
	v, err := rawJSON(column, raw)
	if err != nil {
		return fmt.Errorf("store: set %s: %w", column, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE projects SET `+column+` = ? WHERE id = ? AND removed IS NULL`, v, id)
	if err != nil {
		return fmt.Errorf("store: set %s of %q: %w", column, id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: project %q: %w", id, errdefs.ErrNotFound)
	}
	return nil
}

// RemoveProject marks a project removed and deletes its API keys, in one
// transaction; its other records stay. It refuses (ErrConflict) while a
// sandbox of the project is not stopped, and the default project.
func (s *Store) RemoveProject(ctx context.Context, id string, at time.Time) (keys []string, err error) {
	if id == DefaultProject {
		return nil, fmt.Errorf("store: project %q is the default project and cannot be removed: %w", id, errdefs.ErrConflict)
	}
	n, err := nanos("removed", at)
	if err != nil {
		return nil, fmt.Errorf("store: remove project: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: remove project: %w", err)
	}
	defer func() {
		if err != nil {
			rollback(tx)
		}
	}()
	res, err := tx.ExecContext(ctx, `UPDATE projects SET removed = ? WHERE id = ? AND removed IS NULL`, n, id)
	if err != nil {
		return nil, fmt.Errorf("store: remove project %q: %w", id, err)
	}
	if c, _ := res.RowsAffected(); c == 0 {
		return nil, fmt.Errorf("store: project %q: %w", id, errdefs.ErrNotFound)
	}
	var live int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sandboxes WHERE project = ? AND state != ?`, id, StateStopped).Scan(&live); err != nil {
		return nil, fmt.Errorf("store: remove project %q: %w", id, err)
	}
	if live > 0 {
		return nil, fmt.Errorf("store: project %q has %d sandboxes not stopped: destroy them first: %w", id, live, errdefs.ErrConflict)
	}
	rows, err := tx.QueryContext(ctx, `DELETE FROM api_keys WHERE project = ? RETURNING id`, id)
	if err != nil {
		return nil, fmt.Errorf("store: remove project %q: %w", id, err)
	}
	keys = []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: remove project %q: %w", id, err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: remove project %q: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: remove project %q: %w", id, err)
	}
	return keys, nil
}

// ownerQueries find the project of an object, by its kind (the names
// are tenant.Kind's; the store does not import tenant).
var ownerQueries = map[string]string{
	"sandbox":      `SELECT project FROM sandboxes WHERE id = ?`,
	"task":         `SELECT s.project FROM tasks t JOIN sandboxes s ON s.id = t.sandbox_id WHERE t.id = ?`,
	"approval":     `SELECT s.project FROM approvals a JOIN sandboxes s ON s.id = a.sandbox_id WHERE a.id = ?`,
	"apikey":       `SELECT project FROM api_keys WHERE id = ?`,
	"secret grant": `SELECT project FROM secret_grants WHERE id = ?`,
	"project":      `SELECT id FROM projects WHERE id = ? AND removed IS NULL`,
}

// OwnerOf is the project that owns object id of kind: ErrNotFound when
// there is no such object, ErrInvalid for a kind it does not know.
func (s *Store) OwnerOf(ctx context.Context, kind, id string) (string, error) {
	q, ok := ownerQueries[kind]
	if !ok {
		return "", fmt.Errorf("store: owner of a %q: %w", kind, errdefs.ErrInvalid)
	}
	var project string
	err := s.r.QueryRowContext(ctx, q, id).Scan(&project)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: %s %q: %w", kind, id, errdefs.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: owner of %s %q: %w", kind, id, err)
	}
	return project, nil
}
