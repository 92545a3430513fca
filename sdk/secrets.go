package sdk

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// Secrets are the operator's: these calls work on the daemon's unix socket
// only (over TCP they are refused), and no call ever returns a value.

// SecretInfo is a stored secret: its name and times, never its value.
type SecretInfo = wire.SecretInfo

// SecretGrant lets one sandbox (or a task's sandbox) use a secret, for the
// named hosts, until it expires or is revoked.
type SecretGrant = wire.SecretGrant

// SecretGrantRequest names who may use a secret, how, and for how long.
type SecretGrantRequest struct {
	SandboxID string   `json:"sandbox_id,omitempty"` // exactly one of SandboxID and TaskID
	TaskID    string   `json:"task_id,omitempty"`
	Mode      string   `json:"mode,omitempty"` // "env" (default) or "broker"
	Env       string   `json:"env,omitempty"`  // default: the secret's name
	Hosts     []string `json:"hosts"`
	// Headers (broker mode): the request headers the value goes in;
	// empty means Authorization only. Never Cookie.
	Headers []string `json:"headers,omitempty"`
	// TTL: 0 is the daemon's default (1h); at most 24h.
	TTL time.Duration `json:"-"`
}

// SetSecret stores a secret, sealed with the daemon's key, replacing one
// of the same name.
func (c *Client) SetSecret(ctx context.Context, name string, value []byte) (*SecretInfo, error) {
	var s SecretInfo
	if err := c.call(ctx, http.MethodPut, "/v1/secrets/"+url.PathEscape(name), nil, wire.SecretValue{Value: string(value)}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Secrets lists the stored secrets.
func (c *Client) Secrets(ctx context.Context) ([]SecretInfo, error) {
	var w wire.SecretList
	if err := c.call(ctx, http.MethodGet, "/v1/secrets", nil, nil, &w); err != nil {
		return nil, err
	}
	return w.Secrets, nil
}

// DeleteSecret removes a secret; its grants end with it.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, "/v1/secrets/"+url.PathEscape(name), nil, nil, nil)
}

// GrantSecret lets a sandbox or task use a secret.
func (c *Client) GrantSecret(ctx context.Context, name string, req SecretGrantRequest) (*SecretGrant, error) {
	body := wire.SecretGrantRequest{SandboxID: req.SandboxID, TaskID: req.TaskID, Mode: req.Mode, Env: req.Env, Hosts: req.Hosts,
		Headers: req.Headers, TTLSeconds: int64((req.TTL + time.Second - 1) / time.Second)}
	var g SecretGrant
	if err := c.call(ctx, http.MethodPost, "/v1/secrets/"+url.PathEscape(name)+"/grants", nil, body, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// SecretGrants lists grants, newest first: of one sandbox, or all ("").
func (c *Client) SecretGrants(ctx context.Context, sandboxID string) ([]SecretGrant, error) {
	q := url.Values{}
	if sandboxID != "" {
		q.Set("sandbox", sandboxID)
	}
	var w wire.SecretGrantList
	if err := c.call(ctx, http.MethodGet, "/v1/secret-grants", q, nil, &w); err != nil {
		return nil, err
	}
	return w.Grants, nil
}

// RevokeSecretGrant ends a grant now.
func (c *Client) RevokeSecretGrant(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/v1/secret-grants/"+url.PathEscape(id), nil, nil, nil)
}
