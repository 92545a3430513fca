package sdk

import (
	"context"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// CacheEntry is one project's dependency cache of one ecosystem.
type CacheEntry = wire.CacheEntry

// Caches lists the daemon's per-project dependency caches (unix socket
// only; a daemon without them answers unsupported).
func (c *Client) Caches(ctx context.Context) ([]CacheEntry, error) {
	var r wire.CacheList
	if err := c.call(ctx, http.MethodGet, "/v1/caches", nil, nil, &r); err != nil {
		return nil, err
	}
	return r.Caches, nil
}

// ClearCaches removes the dependency caches of project ("": every
// project's) and ecosystem ("": every one), and says which went (unix
// socket only; recorded as cache.clear).
func (c *Client) ClearCaches(ctx context.Context, project, ecosystem string) ([]CacheEntry, error) {
	var r wire.CacheClearResult
	if err := c.call(ctx, http.MethodPost, "/v1/caches/clear", nil, wire.CacheClearRequest{Project: project, Ecosystem: ecosystem}, &r); err != nil {
		return nil, err
	}
	return r.Cleared, nil
}
