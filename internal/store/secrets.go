package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// SecretsVersion is the schema version that made secrets (and audit
// events) per project: a database opened at an earlier one (OpenedAt)
// had its secrets moved to DefaultProject.
const SecretsVersion = 9

// Secret is a secret's record: its value sealed by the daemon's key.
// A secret's name is its project's: another project may hold one of the
// same name.
type Secret struct {
	Project, Name    string // Project "": DefaultProject (PutSecret)
	Sealed           []byte
	Created, Updated time.Time
}

// PutSecret creates or replaces a secret of its project (Created is kept
// on replace); a project not in use is ErrNotFound.
func (s *Store) PutSecret(ctx context.Context, sec *Secret) error {
	if sec == nil || sec.Name == "" || len(sec.Sealed) == 0 {
		return fmt.Errorf("store: put secret: %w", invalidf("name and sealed value are required"))
	}
	if sec.Project == "" {
		sec.Project = DefaultProject
	}
	created, err := nanos("created", sec.Created)
	if err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	updated, err := nanos("updated", sec.Updated)
	if err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO secrets (project, name, sealed, created, updated) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (project, name) DO UPDATE SET sealed = excluded.sealed, updated = excluded.updated`, sec.Project, sec.Name, sec.Sealed, created, updated)
	if isNoProject(err) || isForeignKey(err) {
		return fmt.Errorf("store: project %q: %w", sec.Project, errdefs.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: put secret %q: %w", sec.Name, classify(err))
	}
	return nil
}

const secretCols = `project, name, sealed, created, updated`

func scanSecret(sc scanner) (*Secret, error) {
	var sec Secret
	var created, updated int64
	if err := sc.Scan(&sec.Project, &sec.Name, &sec.Sealed, &created, &updated); err != nil {
		return nil, err
	}
	sec.Created, sec.Updated = fromNanos(created), fromNanos(updated)
	return &sec, nil
}

// GetSecret returns project's secret name (ErrNotFound if it has none of
// that name, whatever other projects hold).
func (s *Store) GetSecret(ctx context.Context, project, name string) (*Secret, error) {
	sec, err := scanSecret(s.r.QueryRowContext(ctx, `SELECT `+secretCols+` FROM secrets WHERE project = ? AND name = ?`, project, name))
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("store: secret %q: %w", name, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: secret %q: %w", name, err)
	}
	return sec, nil
}

// ListSecrets returns project's secrets by name ("": every project's,
// by project and name).
func (s *Store) ListSecrets(ctx context.Context, project string) ([]*Secret, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+secretCols+` FROM secrets WHERE (? = '' OR project = ?) ORDER BY project, name`, project, project)
	if err != nil {
		return nil, fmt.Errorf("store: list secrets: %w", err)
	}
	defer rows.Close()
	out := []*Secret{}
	for rows.Next() {
		sec, err := scanSecret(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	return out, rows.Err()
}

// DeleteSecret removes project's secret name and, with it, its grants.
func (s *Store) DeleteSecret(ctx context.Context, project, name string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM secrets WHERE project = ? AND name = ?`, project, name)
	if err != nil {
		return fmt.Errorf("store: delete secret %q: %w", name, classify(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: secret %q: %w", name, errdefs.ErrNotFound)
	}
	return nil
}

// SecretGrant lets one sandbox (and its task) use a secret of its
// project until Expires.
type SecretGrant struct {
	ID, Secret, SandboxID, TaskID string
	Project                       string // the sandbox's (PutSecretGrant sets it)
	Mode                          string // "env" or "broker"
	Env                           string // the variable it is given as
	Hosts                         []string
	Placeholder                   string   // broker: what the sandbox holds instead
	Headers                       []string // broker: the request headers it goes in; nil: Authorization
	Created, Expires              time.Time
	CreatedBy                     string
	Revoked                       *time.Time
}

// PutSecretGrant records a grant of the secret of its sandbox's
// project of that name, and sets g.Project: a sandbox or a secret that
// is not there (a secret of another project is not) is ErrNotFound.
func (s *Store) PutSecretGrant(ctx context.Context, g *SecretGrant) error {
	if g == nil || g.ID == "" || g.Secret == "" || g.SandboxID == "" || g.Env == "" {
		return fmt.Errorf("store: put secret grant: %w", invalidf("id, secret, sandbox and env are required"))
	}
	hosts, err := stringsJSON("hosts", g.Hosts)
	if err != nil {
		return fmt.Errorf("store: put secret grant: %w", err)
	}
	headers, err := stringsJSON("headers", g.Headers)
	if err != nil {
		return fmt.Errorf("store: put secret grant: %w", err)
	}
	created, err := nanos("created", g.Created)
	if err != nil {
		return fmt.Errorf("store: put secret grant: %w", err)
	}
	expires, err := nanos("expires", g.Expires)
	if err != nil {
		return fmt.Errorf("store: put secret grant: %w", err)
	}
	// The project is the sandbox's, read in the same statement: the
	// foreign key then finds the secret in that project or nowhere.
	err = s.w.QueryRowContext(ctx, `INSERT INTO secret_grants (id, project, secret, sandbox_id, task_id, mode, env, hosts, placeholder, created, expires, created_by, headers)
		SELECT ?, project, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM sandboxes WHERE id = ? RETURNING project`,
		g.ID, g.Secret, g.TaskID, g.Mode, g.Env, hosts, g.Placeholder, created, expires, g.CreatedBy, headers, g.SandboxID).Scan(&g.Project)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: put secret grant: sandbox %q: %w", g.SandboxID, errdefs.ErrNotFound)
	case isForeignKey(err):
		return fmt.Errorf("store: put secret grant: secret %q: %w", g.Secret, errdefs.ErrNotFound)
	case err != nil:
		return fmt.Errorf("store: put secret grant %q: %w", g.ID, classify(err))
	}
	return nil
}

const secretGrantCols = `id, project, secret, sandbox_id, task_id, mode, env, hosts, placeholder, created, expires, created_by, revoked, headers`

func scanSecretGrants(rows *sql.Rows) ([]*SecretGrant, error) {
	defer rows.Close()
	out := []*SecretGrant{}
	for rows.Next() {
		var g SecretGrant
		var hosts, headers []byte
		var created, expires int64
		var revoked sql.NullInt64
		if err := rows.Scan(&g.ID, &g.Project, &g.Secret, &g.SandboxID, &g.TaskID, &g.Mode, &g.Env, &hosts, &g.Placeholder, &created, &expires, &g.CreatedBy, &revoked, &headers); err != nil {
			return nil, err
		}
		var err error
		if g.Hosts, err = fromStringsJSON("hosts", hosts); err != nil {
			return nil, err
		}
		if g.Headers, err = fromStringsJSON("headers", headers); err != nil {
			return nil, err
		}
		g.Created, g.Expires, g.Revoked = fromNanos(created), fromNanos(expires), fromOptNanos(revoked)
		out = append(out, &g)
	}
	return out, rows.Err()
}

// ActiveSecretGrants returns a sandbox's grants in force at now.
func (s *Store) ActiveSecretGrants(ctx context.Context, sandboxID string, now time.Time) ([]*SecretGrant, error) {
	n, err := nanos("now", now)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+secretGrantCols+` FROM secret_grants
		WHERE sandbox_id = ? AND expires > ? AND revoked IS NULL ORDER BY created, id`, sandboxID, n)
	if err != nil {
		return nil, fmt.Errorf("store: secret grants: %w", err)
	}
	return scanSecretGrants(rows)
}

// ListSecretGrants returns grants, newest first: of one project ("":
// every one), of one sandbox ("": all).
func (s *Store) ListSecretGrants(ctx context.Context, project, sandboxID string) ([]*SecretGrant, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+secretGrantCols+` FROM secret_grants
		WHERE (? = '' OR project = ?) AND (? = '' OR sandbox_id = ?) ORDER BY created DESC, id`, project, project, sandboxID, sandboxID)
	if err != nil {
		return nil, fmt.Errorf("store: secret grants: %w", err)
	}
	return scanSecretGrants(rows)
}

// GetSecretGrant returns one grant.
func (s *Store) GetSecretGrant(ctx context.Context, id string) (*SecretGrant, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+secretGrantCols+` FROM secret_grants WHERE id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("store: secret grant: %w", err)
	}
	l, err := scanSecretGrants(rows)
	if err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, fmt.Errorf("store: secret grant %q: %w", id, errdefs.ErrNotFound)
	}
	return l[0], nil
}

// RevokeSecretGrant ends a grant now (a revoked grant stays revoked).
func (s *Store) RevokeSecretGrant(ctx context.Context, id string, at time.Time) error {
	n, err := nanos("revoked", at)
	if err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `UPDATE secret_grants SET revoked = ? WHERE id = ? AND revoked IS NULL`, n, id)
	if err != nil {
		return fmt.Errorf("store: revoke secret grant: %w", err)
	}
	if c, _ := res.RowsAffected(); c == 0 {
		if _, err := s.GetSecretGrant(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("store: secret grant %q is already revoked: %w", id, errdefs.ErrConflict)
	}
	return nil
}
