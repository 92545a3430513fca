package sdk

import (
	"context"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// Pool is one warm pool of the daemon (airlock serve --pool).
type Pool = wire.Pool

// Pools lists the daemon's warm pools with their counts.
func (c *Client) Pools(ctx context.Context) ([]Pool, error) {
	var r wire.PoolList
	if err := c.call(ctx, http.MethodGet, "/v1/pools", nil, nil, &r); err != nil {
		return nil, err
	}
	return r.Pools, nil
}
