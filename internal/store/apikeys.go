package store

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// APIKey is a key's record: its hex SHA-256, never the key.
type APIKey struct {
	ID, Name, Hash string
	Created        time.Time
}

// PutAPIKey records a key.
func (s *Store) PutAPIKey(ctx context.Context, k *APIKey) error {
	if k == nil || k.ID == "" || len(k.Hash) != 64 {
		return fmt.Errorf("store: put api key: %w", invalidf("id and a 64-hex-digit hash are required"))
	}
	created, err := nanos("created", k.Created)
	if err != nil {
		return fmt.Errorf("store: put api key: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, created) VALUES (?, ?, ?, ?)`, k.ID, k.Name, k.Hash, created); err != nil {
		if isDuplicate(err) {
			return fmt.Errorf("store: api key %q already exists: %w", k.ID, errdefs.ErrConflict)
		}
		return fmt.Errorf("store: put api key: %w", err)
	}
	return nil
}

// APIKeyByHash finds the key with this hash (ErrNotFound if none).
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*APIKey, error) {
	var k APIKey
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT id, name, hash, created FROM api_keys WHERE hash = ?`, hash).Scan(&k.ID, &k.Name, &k.Hash, &created)
	if err != nil {
		return nil, fmt.Errorf("store: api key: %w", errdefs.ErrNotFound)
	}
	k.Created = fromNanos(created)
	return &k, nil
}

// ListAPIKeys returns every key record, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context) ([]*APIKey, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, name, hash, created FROM api_keys ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("store: list api keys: %w", err)
	}
	defer rows.Close()
	out := []*APIKey{}
	for rows.Next() {
		var k APIKey
		var created int64
		if err := rows.Scan(&k.ID, &k.Name, &k.Hash, &created); err != nil {
			return nil, err
		}
		k.Created = fromNanos(created)
		out = append(out, &k)
	}
	return out, rows.Err()
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
