// Package apikeys keeps the daemon's API keys, a module of the sandbox
// core (hook.Module). A key is shown once, when it is made; only its
// SHA-256 is stored, and a key is checked by hash in constant time. Keys
// are made and revoked on the daemon's unix socket only (the API's TCP
// handler refuses it); every key made or revoked is on the audit record.
//
// It uses only the store, the redactor (a new key is a secret: it never
// reaches a stored record) and the audit record of its hook.Core.
package apikeys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// Key is a key's record as the API shows it (never the key itself).
type Key struct {
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

// Keys is the API keys module. Its methods fail (ErrUnsupported) until
// manager.New has attached it.
type Keys struct {
	st     *store.Store
	learn  func(secret string)
	record func(context.Context, audit.Entry) error
}

// New makes the module; attach it through manager.Config.Modules.
func New() *Keys { return &Keys{} }

// Name is the module's name.
func (k *Keys) Name() string { return "apikeys" }

// Attach takes what the module uses of the core.
func (k *Keys) Attach(c hook.Core) error {
	k.st, k.learn, k.record = c.Store(), func(s string) { c.Redactor().Add(s) }, c.Record
	return nil
}

func (k *Keys) attached() error {
	if k.st == nil {
		return fmt.Errorf("api keys: the module is not attached to a manager: %w", errdefs.ErrUnsupported)
	}
	return nil
}

func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// Create makes a key; the key is returned once and only its hash is
// kept. format "" (or "airlock") makes an "ak_" key, "e2b" one shaped for
// the E2B SDKs; both work on every door.
func (k *Keys) Create(ctx context.Context, name, format string) (*Key, string, error) {
	if err := k.attached(); err != nil {
		return nil, "", err
	}
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
	if err := k.st.PutAPIKey(ctx, rec); err != nil {
		return nil, "", err
	}
	k.learn(key)
	_ = k.record(ctx, audit.Entry{Kind: "apikey.create", Payload: map[string]any{"id": rec.ID, "name": name}})
	return &Key{ID: rec.ID, Name: rec.Name, Created: rec.Created}, key, nil
}

// Of returns the key's record (never the key) when key is valid. Its ID
// names the caller in the audit record (actor "apikey:ID").
func (k *Keys) Of(ctx context.Context, key string) (*Key, bool) {
	if k.st == nil || !(strings.HasPrefix(key, KeyPrefix) || strings.HasPrefix(key, E2BKeyPrefix)) || len(key) > 200 {
		return nil, false
	}
	h := keyHash(key)
	rec, err := k.st.APIKeyByHash(ctx, h)
	if err != nil || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(h)) != 1 {
		return nil, false
	}
	return &Key{ID: rec.ID, Name: rec.Name, Created: rec.Created}, true
}

// List lists the keys, oldest first.
func (k *Keys) List(ctx context.Context) ([]*Key, error) {
	if err := k.attached(); err != nil {
		return nil, err
	}
	recs, err := k.st.ListAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Key, 0, len(recs))
	for _, r := range recs {
		out = append(out, &Key{ID: r.ID, Name: r.Name, Created: r.Created})
	}
	return out, nil
}

// Delete revokes a key (ErrNotFound if unknown).
func (k *Keys) Delete(ctx context.Context, id string) error {
	if err := k.attached(); err != nil {
		return err
	}
	if err := k.st.DeleteAPIKey(ctx, id); err != nil {
		return err
	}
	return k.record(ctx, audit.Entry{Kind: "apikey.delete", Payload: map[string]any{"id": id}})
}
