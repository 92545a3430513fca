package sdk

import (
	"context"
	"net/http"
	"net/url"

	"github.com/airlock-dev/airlock/wire"
)

// ProjectUsage is a project's quotas in force, what it sets over the
// daemon's defaults, and what it holds now.
type ProjectUsage = wire.ProjectUsage

// QuotaSettings are what a project sets over the daemon's default
// quotas: a nil field is the default's, 0 bounds nothing.
type QuotaSettings = wire.QuotaSettings

// QuotaHit is the quota a refused create or command hit (Error.Quota).
type QuotaHit = wire.QuotaHit

// The codes of a request a quota or a key's rate refused (429).
const (
	CodeQuotaExceeded = wire.CodeQuotaExceeded
	CodeRateLimited   = wire.CodeRateLimited
)

// ProjectUsage is project id's quotas and usage (a key: its own
// project's only).
func (c *Client) ProjectUsage(ctx context.Context, id string) (*ProjectUsage, error) {
	var u ProjectUsage
	if err := c.call(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(id)+"/usage", nil, nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// SetProjectQuotas replaces what project id sets over the daemon's
// default quotas (every field: one left nil goes back to the default).
// The operator sets any; a project's admin key may only lower its own.
func (c *Client) SetProjectQuotas(ctx context.Context, id string, s QuotaSettings) (*ProjectUsage, error) {
	var u ProjectUsage
	if err := c.call(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(id)+"/quotas", nil, s, &u); err != nil {
		return nil, err
	}
	return &u, nil
}
