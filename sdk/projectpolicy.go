package sdk

import (
	"context"
	"net/http"
	"net/url"

	"github.com/airlock-dev/airlock/wire"
)

// ProjectPolicy is a project's own policy layer (Policy nil: none).
type ProjectPolicy = wire.ProjectPolicy

// ProjectPolicy is project id's own policy layer (any key of the
// project reads it).
func (c *Client) ProjectPolicy(ctx context.Context, id string) (*ProjectPolicy, error) {
	var p ProjectPolicy
	if err := c.call(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(id)+"/policy", nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// SetProjectPolicy replaces project id's own policy layer (an empty
// layer clears it): the project's admin key or the operator. A layer
// that relaxes the daemon's policy file for the project is refused
// (denied); new sandboxes of the project get it, never looser than
// their template's section (docs/tenancy.md).
func (c *Client) SetProjectPolicy(ctx context.Context, id string, l PolicyLayer) (*ProjectPolicy, error) {
	var p ProjectPolicy
	if err := c.call(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(id)+"/policy", nil, l, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ProjectSettings are what a project sets for its new sandboxes: a
// default template and a lifetime bound under the daemon's.
type ProjectSettings = wire.ProjectSettings

// ProjectSettingsRequest is the body of SetProjectSettings.
type ProjectSettingsRequest = wire.ProjectSettingsRequest

// ProjectSettings is project id's settings (any key of the project).
func (c *Client) ProjectSettings(ctx context.Context, id string) (*ProjectSettings, error) {
	var p ProjectSettings
	if err := c.call(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(id)+"/settings", nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// SetProjectSettings replaces project id's settings (both fields: one
// left zero is the daemon's): the project's admin key or the operator.
// A lifetime bound over the daemon's maximum lifetime is refused.
func (c *Client) SetProjectSettings(ctx context.Context, id string, s ProjectSettingsRequest) (*ProjectSettings, error) {
	var p ProjectSettings
	if err := c.call(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(id)+"/settings", nil, s, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
