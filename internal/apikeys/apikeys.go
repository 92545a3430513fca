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
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Key is a key's record as the API shows it (never the key itself).
type Key struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Project and Role: the key acts for that project, as that role.
	Project string      `json:"project"`
	Role    tenant.Role `json:"role"`
	// Expires: the key stops working then (a rotated key's overlap).
	Expires *time.Time `json:"expires,omitempty"`
}

// Principal is whom the key makes its caller.
func (k *Key) Principal() tenant.Principal {
	return tenant.Principal{Project: k.Project, Role: k.Role, KeyID: k.ID}
}

// Request asks for a key: Name the operator's, Format "" (or "airlock")
// or "e2b", Project "" (the caller's own; the operator's: the default
// project), Role "" (agent).
type Request struct {
	Name, Format, Project string
	Role                  tenant.Role
}

func keyOf(r *store.APIKey) *Key {
	return &Key{ID: r.ID, Name: r.Name, Created: r.Created, Project: r.Project, Role: tenant.Role(r.Role), Expires: r.Expires}
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
	now    func() time.Time
	bound  bindings
}

// New makes the module; attach it through manager.Config.Modules.
func New() *Keys { return &Keys{} }

// Name is the module's name.
func (k *Keys) Name() string { return "apikeys" }

// Attach takes what the module uses of the core.
func (k *Keys) Attach(c hook.Core) error {
	k.st, k.learn, k.record, k.now = c.Store(), func(s string) { c.Redactor().Add(s) }, c.Record, c.Now
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

// Create makes an agent key of the caller's project (Make with only a
// name and format).
func (k *Keys) Create(ctx context.Context, name, format string) (*Key, string, error) {
	return k.Make(ctx, Request{Name: name, Format: format})
}

// Make makes a key; the key is returned once and only its hash is kept.
// Both formats work on every door. A caller makes keys only of its own
// project (another is not found, as if it did not exist) and of a role
// no higher than its own.
func (k *Keys) Make(ctx context.Context, req Request) (*Key, string, error) {
	if err := k.attached(); err != nil {
		return nil, "", err
	}
	if len(req.Name) > 100 || strings.ContainsAny(req.Name, "\n\x00") {
		return nil, "", fmt.Errorf("key name: at most 100 characters on one line: %w", errdefs.ErrInvalid)
	}
	role, err := k.role(ctx, req.Role)
	if err != nil {
		return nil, "", err
	}
	project, err := tenant.NewObjectProject(ctx, req.Project)
	if err != nil {
		return nil, "", err
	}
	key, err := newKey(req.Format)
	if err != nil {
		return nil, "", err
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	rec := &store.APIKey{ID: "k-" + hex.EncodeToString(id[:]), Name: req.Name, Hash: keyHash(key), Created: k.now(), Project: project, Role: string(role)}
	if err := k.st.PutAPIKey(ctx, rec); err != nil {
		return nil, "", err
	}
	k.learn(key)
	_ = k.record(ctx, audit.Entry{Project: project, Kind: "apikey.create", Payload: map[string]any{"id": rec.ID, "name": req.Name, "project": project, "role": string(role)}})
	return keyOf(rec), key, nil
}

// role checks the role asked for against the caller's own.
func (k *Keys) role(ctx context.Context, asked tenant.Role) (tenant.Role, error) {
	if asked == "" {
		asked = tenant.Agent
	}
	r, err := tenant.ParseKeyRole(string(asked))
	if err != nil {
		return "", err
	}
	if !tenant.Of(ctx).Role.AtLeast(r) {
		return "", fmt.Errorf("a %s key cannot make a %s key: %w", tenant.Of(ctx).Role, r, errdefs.ErrDenied)
	}
	return r, nil
}

func newKey(format string) (string, error) {
	var secret [20]byte
	_, _ = rand.Read(secret[:])
	switch format {
	case "", "airlock":
		return KeyPrefix + hex.EncodeToString(secret[:16]), nil
	case "e2b":
		return E2BKeyPrefix + hex.EncodeToString(secret[:]), nil
	}
	return "", fmt.Errorf("key format %q: airlock or e2b: %w", format, errdefs.ErrInvalid)
}

// Of returns the key's record (never the key) when key is valid and not
// expired. Its ID names the caller in the audit record (actor
// "apikey:ID"), its Principal the project and role it acts as.
func (k *Keys) Of(ctx context.Context, key string) (*Key, bool) {
	if k.st == nil || !(strings.HasPrefix(key, KeyPrefix) || strings.HasPrefix(key, E2BKeyPrefix)) || len(key) > 200 {
		return nil, false
	}
	h := keyHash(key)
	rec, err := k.st.APIKeyByHash(ctx, h)
	if err != nil || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(h)) != 1 {
		return nil, false
	}
	if rec.Expires != nil && !k.now().Before(*rec.Expires) {
		return nil, false
	}
	return keyOf(rec), true
}

// ByID is key id's record when the key is still valid (not revoked, not
// expired): for a door that holds what a key was given (the E2B door's
// access tokens) and acts as that key later.
func (k *Keys) ByID(ctx context.Context, id string) (*Key, bool) {
	if k.st == nil {
		return nil, false
	}
	rec, err := k.st.GetAPIKey(ctx, id)
	if err != nil || rec.Expires != nil && !k.now().Before(*rec.Expires) {
		return nil, false
	}
	return keyOf(rec), true
}

// List lists the keys of the caller's project (the operator's: every
// project's), oldest first.
func (k *Keys) List(ctx context.Context) ([]*Key, error) {
	if err := k.attached(); err != nil {
		return nil, err
	}
	recs, err := k.st.ListProjectAPIKeys(ctx, tenant.Scope(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]*Key, 0, len(recs))
	for _, r := range recs {
		out = append(out, keyOf(r))
	}
	return out, nil
}

// get is key id if the caller may see it; another project's is not
// found, worded as an unknown one.
func (k *Keys) get(ctx context.Context, id string) (*store.APIKey, error) {
	rec, err := k.st.GetAPIKey(ctx, id)
	if err != nil || !tenant.Of(ctx).Sees(rec.Project) {
		return nil, fmt.Errorf("store: api key %q: %w", id, errdefs.ErrNotFound)
	}
	return rec, nil
}

// Delete revokes a key (ErrNotFound if unknown or another project's): it
// stops working at once, its streams in progress included (Bind).
func (k *Keys) Delete(ctx context.Context, id string) error {
	if err := k.attached(); err != nil {
		return err
	}
	rec, err := k.get(ctx, id)
	if err != nil {
		return err
	}
	if err := k.st.DeleteAPIKey(ctx, id); err != nil {
		return err
	}
	k.bound.revoke(id)
	return k.record(ctx, audit.Entry{Project: rec.Project, Kind: "apikey.delete", Payload: map[string]any{"id": id}})
}

// MaxOverlap bounds a rotation's overlap.
const MaxOverlap = 30 * 24 * time.Hour

// Rotate makes a new key like key id (its name, project and role; in
// format, "" for airlock's) and ends the old one after overlap (0: at
// once; at most MaxOverlap); both work until then.
func (k *Keys) Rotate(ctx context.Context, id, format string, overlap time.Duration) (*Key, string, error) {
	if err := k.attached(); err != nil {
		return nil, "", err
	}
	if overlap < 0 || overlap > MaxOverlap {
		return nil, "", fmt.Errorf("overlap %s: from 0 to %s: %w", overlap, MaxOverlap, errdefs.ErrInvalid)
	}
	old, err := k.get(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if !tenant.Of(ctx).Role.AtLeast(tenant.Role(old.Role)) {
		return nil, "", fmt.Errorf("a %s key cannot rotate a %s key: %w", tenant.Of(ctx).Role, old.Role, errdefs.ErrDenied)
	}
	nk, key, err := k.Make(ctx, Request{Name: old.Name, Format: format, Project: old.Project, Role: tenant.Role(old.Role)})
	if err != nil {
		return nil, "", err
	}
	end := k.now().Add(overlap)
	if err := k.st.SetAPIKeyExpiry(ctx, id, end); err != nil {
		return nil, "", err
	}
	k.bound.expire(id, end)
	_ = k.record(ctx, audit.Entry{Project: old.Project, Kind: "apikey.rotate", Payload: map[string]any{"id": id, "new": nk.ID, "ends": end}})
	return nk, key, nil
}
