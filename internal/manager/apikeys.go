package manager

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// APIKey is a key's record as the API shows it (never the key itself).
type APIKey struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// KeyPrefix starts every API key of airlock's own format;
// E2BKeyPrefix the keys shaped for the E2B SDKs ("e2b_" + 40 hex digits).
const (
	KeyPrefix    = "ak_"
	E2BKeyPrefix = "e2b_"
)

func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// CreateAPIKey makes a key; the key is returned once and only its hash is
// kept. format "" (or "airlock") makes an "ak_" key, "e2b" one shaped for
// the E2B SDKs; both work on every door.
func (m *Manager) CreateAPIKey(ctx context.Context, name, format string) (*APIKey, string, error) {
	if len(name) > 100 || strings.ContainsAny(name, "\n\x00") {
		return nil, "", fmt.Errorf("key name: at most 100 characters on one line: %w", errdefs.ErrInvalid)
	}
	var secret [20]byte
	var id [16]byte
	_, _ = rand.Read(secret[:])
	_, _ = rand.Read(id[:6])
	var key string
	switch format {
	case "", "airlock":
		key = KeyPrefix + hex.EncodeToString(secret[:16])
	case "e2b":
		key = E2BKeyPrefix + hex.EncodeToString(secret[:])
	default:
		return nil, "", fmt.Errorf("key format %q: airlock or e2b: %w", format, errdefs.ErrInvalid)
	}
	rec := &store.APIKey{ID: "k-" + hex.EncodeToString(id[:6]), Name: name, Hash: keyHash(key), Created: time.Now().UTC()}
	if err := m.cfg.Store.PutAPIKey(ctx, rec); err != nil {
		return nil, "", err
	}
	m.cfg.Redactor.Add(key)
	_ = m.record(ctx, audit.Entry{Kind: "apikey.create", Payload: map[string]any{"id": rec.ID, "name": name}})
	return &APIKey{ID: rec.ID, Name: rec.Name, Created: rec.Created}, key, nil
}

// CheckAPIKey says whether key is a valid key.
func (m *Manager) CheckAPIKey(ctx context.Context, key string) bool {
	_, ok := m.APIKeyOf(ctx, key)
	return ok
}

// APIKeyOf returns the key's record (never the key) when key is valid.
// Its ID names the caller in the audit record (actor "apikey:ID").
func (m *Manager) APIKeyOf(ctx context.Context, key string) (*APIKey, bool) {
	if !(strings.HasPrefix(key, KeyPrefix) || strings.HasPrefix(key, E2BKeyPrefix)) || len(key) > 200 {
		return nil, false
	}
	h := keyHash(key)
	rec, err := m.cfg.Store.APIKeyByHash(ctx, h)
	if err != nil || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(h)) != 1 {
		return nil, false
	}
	return &APIKey{ID: rec.ID, Name: rec.Name, Created: rec.Created}, true
}

// APIKeys lists the keys.
func (m *Manager) APIKeys(ctx context.Context) ([]*APIKey, error) {
	recs, err := m.cfg.Store.ListAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*APIKey, 0, len(recs))
	for _, r := range recs {
		out = append(out, &APIKey{ID: r.ID, Name: r.Name, Created: r.Created})
	}
	return out, nil
}

// DeleteAPIKey revokes a key.
func (m *Manager) DeleteAPIKey(ctx context.Context, id string) error {
	if err := m.cfg.Store.DeleteAPIKey(ctx, id); err != nil {
		return err
	}
	return m.record(ctx, audit.Entry{Kind: "apikey.delete", Payload: map[string]any{"id": id}})
}
