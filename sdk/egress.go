package sdk

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/airlock-dev/airlock/wire"
)

// EgressStatus says whether the daemon runs its egress proxy (without it
// sandboxes have no network at all) and whether the kill switch is on.
type EgressStatus = wire.EgressStatus

// Egress returns the daemon's egress status.
func (c *Client) Egress(ctx context.Context) (*EgressStatus, error) {
	var s EgressStatus
	if err := c.call(ctx, http.MethodGet, "/v1/egress", nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// CutEgress turns the kill switch on (every sandbox's egress refused, open
// connections closed) or off. On the unix socket only.
func (c *Client) CutEgress(ctx context.Context, on bool) (*EgressStatus, error) {
	var s EgressStatus
	if err := c.call(ctx, http.MethodPost, "/v1/egress/cut", nil, wire.EgressCutRequest{On: &on}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// SandboxEgress returns a sandbox's effective egress policy, as JSON (see
// the egress section of 'airlock policy default').
func (c *Client) SandboxEgress(ctx context.Context, id string) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/v1/sandboxes/"+url.PathEscape(id)+"/egress", nil, nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// SetSandboxEgress replaces a running sandbox's runtime egress layer (a
// JSON egress policy: grant, presets, rules) and returns the effective
// policy. Over TCP a layer may only tighten.
func (c *Client) SetSandboxEgress(ctx context.Context, id string, layer json.RawMessage) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodPut, "/v1/sandboxes/"+url.PathEscape(id)+"/egress", nil, layer, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// SandboxEgressCA returns the PEM certificate of the CA the egress proxy
// uses for a sandbox's intercepted (brokered) hosts.
func (c *Client) SandboxEgressCA(ctx context.Context, id string) ([]byte, error) {
	a, err := c.request(ctx, http.MethodGet, "/v1/sandboxes/"+url.PathEscape(id)+"/egress/ca", nil, nil, "", false)
	if err != nil {
		return nil, err
	}
	defer a.close()
	return io.ReadAll(io.LimitReader(a.Body, 1<<20))
}

// EgressTest says what a running sandbox's egress proxy would decide for
// destination (a URL, or host:port for a tunnel) and why, without
// connecting to it and without a record.
func (c *Client) EgressTest(ctx context.Context, id, destination string) (*wire.EgressTest, error) {
	var x wire.EgressTest
	if err := c.call(ctx, http.MethodPost, "/v1/sandboxes/"+url.PathEscape(id)+"/egress/test", nil, wire.EgressTestRequest{Destination: destination}, &x); err != nil {
		return nil, err
	}
	return &x, nil
}
