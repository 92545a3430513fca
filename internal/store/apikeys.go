package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// APIKey is a key's record: its hex SHA-256, never the key.
type APIKey struct {
	ID, Name, Hash string
	Created        time.Time
	// Project and Role: whose key, for what ("" on put: the default
	// project, agent).
	Project, Role string
	// Expires ends the key (a rotated key's overlap); nil: no end.
	Expires *time.Time
}

const selectAPIKey = `SELECT id, name, hash, created, project, role, expires FROM api_keys`

// PutAPIKey records a key; a project that does not exist is ErrNotFound.
func (s *Store) PutAPIKey(ctx context.Context, k *APIKey) error {
	if k == nil || k.ID == "" || len(k.Hash) != 64 {
		return fmt.Errorf("store: put api key: %w", invalidf("id and a 64-hex-digit hash are required"))
	}
	created, err := nanos("created", k.Created)
	if err != nil {
		return fmt.Errorf("store: put api key: %w", err)
	}
	expires, err := optNanos("expires", k.Expires)
	if err != nil {
		return fmt.Errorf("store: put api key: %w", err)
	}
	project, role := k.Project, k.Role
	if project == "" {
		project = DefaultProject
	}
	if role == "" {
		role = "agent"
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, created, project, role, expires) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Name, k.Hash, created, project, role, expires); err != nil {
		if isDuplicate(err) {
			return fmt.Errorf("store: api key %q already exists: %w", k.ID, errdefs.ErrConflict)
		}
		if isNoProject(err) {
			return fmt.Errorf("store: project %q: %w", project, errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: put api key: %w", err)
	}
	return nil
}

func scanAPIKey(sc scanner) (*APIKey, error) {
	var k APIKey
	var created int64
	var expires sql.NullInt64
	if err := sc.Scan(&k.ID, &k.Name, &k.Hash, &created, &k.Project, &k.Role, &expires); err != nil {
		return nil, err
	}
	k.Created, k.Expires = fromNanos(created), fromOptNanos(expires)
	return &k, nil
}

// APIKeyByHash finds the key with this hash (ErrNotFound if none).
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*APIKey, error) {
	k, err := scanAPIKey(s.r.QueryRowContext(ctx, selectAPIKey+` WHERE hash = ?`, hash))
	if err != nil {
		return nil, fmt.Errorf("store: api key: %w", errdefs.ErrNotFound)
	}
	return k, nil
}

// GetAPIKey is key id's record (ErrNotFound if unknown).
func (s *Store) GetAPIKey(ctx context.Context, id string) (*APIKey, error) {
	k, err := scanAPIKey(s.r.QueryRowContext(ctx, selectAPIKey+` WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("store: api key %q: %w", id, errdefs.ErrNotFound)
	}
	return k, nil
}

// ListAPIKeys returns every key record, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context) ([]*APIKey, error) {
	return s.ListProjectAPIKeys(ctx, "")
}

// ListProjectAPIKeys returns a project's key records ("": every
// project's), oldest first.
func (s *Store) ListProjectAPIKeys(ctx context.Context, project string) ([]*APIKey, error) {
	rows, err := s.r.QueryContext(ctx, selectAPIKey+` WHERE (?1 = '' OR project = ?1) ORDER BY created, id`, project)
	if err != nil {
		return nil, fmt.Errorf("store: list api keys: %w", err)
	}
	defer rows.Close()
	out := []*APIKey{}
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// SetAPIKeyExpiry ends key id at t (a rotation's overlap); ErrNotFound if
// unknown.
func (s *Store) SetAPIKeyExpiry(ctx context.Context, id string, t time.Time) error {
	n, err := nanos("expires", t)
	if err != nil {
		return fmt.Errorf("store: api key expiry: %w", err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE api_keys SET expires = ? WHERE id = ? AND (expires IS NULL OR expires > ?)`, n, id, n)
	if err != nil {
		return fmt.Errorf("store: api key expiry: %w", err)
	}
	if c, _ := res.RowsAffected(); c == 0 {
		return fmt.Errorf("store: api key %q: %w", id, errdefs.ErrNotFound)
	}
	return nil
}

// DeleteAPIKey removes a key (ErrNotFound if unknown).
func (s *Store) DeleteAPIKey(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM api_keys WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("store: delete api key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: api key %q: %w", id, errdefs.ErrNotFound)
	}
	return nil
}
