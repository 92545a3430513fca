package sdk

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// Project is a project (a tenant): every sandbox, task, snapshot and key
// belongs to one, and a key sees only its own project's.
type Project = wire.Project

// CreateProject makes a project (the operator's: the unix socket).
func (c *Client) CreateProject(ctx context.Context, name string) (*Project, error) {
	if name == "" {
		return nil, invalidf("empty project name")
	}
	var p Project
	if err := c.call(ctx, http.MethodPost, "/v1/projects", nil, wire.ProjectRequest{Name: name}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListProjects lists the projects the caller sees: the operator every
// one (removed ones too), a key its own.
func (c *Client) ListProjects(ctx context.Context) ([]Project, error) {
	var l wire.ProjectList
	if err := c.call(ctx, http.MethodGet, "/v1/projects", nil, nil, &l); err != nil {
		return nil, err
	}
	if l.Projects == nil {
		l.Projects = []Project{}
	}
	return l.Projects, nil
}

// GetProject is a project the caller sees (another is not found).
func (c *Client) GetProject(ctx context.Context, name string) (*Project, error) {
	if name == "" {
		return nil, invalidf("empty project name")
	}
	var p Project
	if err := c.call(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(name), nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteProject removes a project (the operator's): its keys are revoked,
// its records kept, its name never reused. One with sandboxes not
// stopped, and the default project, are refused.
func (c *Client) DeleteProject(ctx context.Context, name string) error {
	if name == "" {
		return invalidf("empty project name")
	}
	return c.call(ctx, http.MethodDelete, "/v1/projects/"+url.PathEscape(name), nil, nil, nil)
}

// KeyOption shapes a key CreateAPIKey or RotateAPIKey makes.
type KeyOption func(*wire.APIKeyRequest)

// KeyProject makes the key project's ("" : the caller's own).
func KeyProject(project string) KeyOption {
	return func(r *wire.APIKeyRequest) { r.Project = project }
}

// KeyRole makes the key of role "agent" (the default), "reviewer" or
// "admin".
func KeyRole(role string) KeyOption { return func(r *wire.APIKeyRequest) { r.Role = role } }

// KeyE2B shapes the key for the E2B SDKs ("e2b_" and 40 hex digits).
func KeyE2B() KeyOption { return func(r *wire.APIKeyRequest) { r.Format = "e2b" } }

// RotateAPIKey makes a new key of the same project, role and name as key
// id, returned this once; the old key works overlap more (0: it ends
// now; at most 30 days), then stops, its requests in progress too. Of
// the options only KeyE2B applies (project and role are the old key's).
func (c *Client) RotateAPIKey(ctx context.Context, id string, overlap time.Duration, opts ...KeyOption) (*APIKey, error) {
	if id == "" {
		return nil, invalidf("empty key id")
	}
	if overlap < 0 {
		return nil, invalidf("negative overlap %s", overlap)
	}
	var o wire.APIKeyRequest
	for _, f := range opts {
		f(&o)
	}
	if o.Project != "" || o.Role != "" {
		return nil, invalidf("a rotated key keeps the old key's project and role")
	}
	body := wire.APIKeyRotateRequest{Format: o.Format, OverlapSeconds: int64((overlap + time.Second - 1) / time.Second)}
	var k APIKey
	if err := c.call(ctx, http.MethodPost, "/v1/apikeys/"+url.PathEscape(id)+"/rotate", nil, body, &k); err != nil {
		return nil, err
	}
	return &k, nil
}
