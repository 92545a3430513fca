package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Secret is a secret's record: its value sealed by the daemon's key.
type Secret struct {
	Name             string
	Sealed           []byte
	Created, Updated time.Time
}

// PutSecret creates or replaces a secret (Created is kept on replace).
func (s *Store) PutSecret(ctx context.Context, sec *Secret) error {
	if sec == nil || sec.Name == "" || len(sec.Sealed) == 0 {
		return fmt.Errorf("store: put secret: %w", invalidf("name and sealed value are required"))
	}
	created, err := nanos("created", sec.Created)
	if err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	updated, err := nanos("updated", sec.Updated)
	if err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO secrets (name, sealed, created, updated) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, updated = excluded.updated`, sec.Name, sec.Sealed, created, updated)
	if err != nil {
		return fmt.Errorf("store: put secret %q: %w", sec.Name, classify(err))
	}
	return nil
}

// GetSecret returns a secret (ErrNotFound if none).
func (s *Store) GetSecret(ctx context.Context, name string) (*Secret, error) {
	var sec Secret
	var created, updated int64
	err := s.r.QueryRowContext(ctx, `SELECT name, sealed, created, updated FROM secrets WHERE name = ?`, name).Scan(&sec.Name, &sec.Sealed, &created, &updated)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("store: secret %q: %w", name, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: secret %q: %w", name, err)
	}
	sec.Created, sec.Updated = fromNanos(created), fromNanos(updated)
	return &sec, nil
}

// ListSecrets returns every secret, by name.
func (s *Store) ListSecrets(ctx context.Context) ([]*Secret, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, sealed, created, updated FROM secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: list secrets: %w", err)
	}
	defer rows.Close()
	out := []*Secret{}
	for rows.Next() {
		var sec Secret
		var created, updated int64
		if err := rows.Scan(&sec.Name, &sec.Sealed, &created, &updated); err != nil {
			return nil, err
		}
		sec.Created, sec.Updated = fromNanos(created), fromNanos(updated)
		out = append(out, &sec)
	}
	return out, rows.Err()
}

// DeleteSecret removes a secret and, with it, its grants.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM secrets WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("store: delete secret %q: %w", name, classify(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: secret %q: %w", name, errdefs.ErrNotFound)
	}
	return nil
}

// SecretGrant lets one sandbox (and its task) use a secret until Expires.
type SecretGrant struct {
	ID, Secret, SandboxID, TaskID string
	Mode                          string // "env" or "broker"
	Env                           string // the variable it is given as
	Hosts                         []string
	Placeholder                   string   // broker: what the sandbox holds instead
	Headers                       []string // broker: the request headers it goes in; nil: Authorization
	Created, Expires              time.Time
	CreatedBy                     string
	Revoked                       *time.Time
}

// PutSecretGrant records a grant.
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
	_, err = s.w.ExecContext(ctx, `INSERT INTO secret_grants (id, secret, sandbox_id, task_id, mode, env, hosts, placeholder, created, expires, created_by, headers)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.ID, g.Secret, g.SandboxID, g.TaskID, g.Mode, g.Env, hosts, g.Placeholder, created, expires, g.CreatedBy, headers)
	if err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("store: put secret grant: secret or sandbox: %w", errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: put secret grant %q: %w", g.ID, classify(err))
	}
	return nil
}

const secretGrantCols = `id, secret, sandbox_id, task_id, mode, env, hosts, placeholder, created, expires, created_by, revoked, headers`

func scanSecretGrants(rows *sql.Rows) ([]*SecretGrant, error) {
	defer rows.Close()
	out := []*SecretGrant{}
	for rows.Next() {
		var g SecretGrant
		var hosts, headers []byte
		var created, expires int64
		var revoked sql.NullInt64
		if err := rows.Scan(&g.ID, &g.Secret, &g.SandboxID, &g.TaskID, &g.Mode, &g.Env, &hosts, &g.Placeholder, &created, &expires, &g.CreatedBy, &revoked, &headers); err != nil {
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

// ListSecretGrants returns grants, newest first: of one sandbox, or all
// when sandboxID is "".
func (s *Store) ListSecretGrants(ctx context.Context, sandboxID string) ([]*SecretGrant, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+secretGrantCols+` FROM secret_grants
		WHERE (? = '' OR sandbox_id = ?) ORDER BY created DESC, id`, sandboxID, sandboxID)
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
