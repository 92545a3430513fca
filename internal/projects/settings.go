package projects

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Settings are what a project sets for its new sandboxes (the JSON of
// projects.settings).
type Settings struct {
	// DefaultTemplate is the template of a create that names none ("":
	// the daemon's, host). Whether the project may start from it is
	// decided at each create, as for a template the create names.
	DefaultTemplate string `json:"default_template,omitempty"`
	// MaxLifetimeSeconds bounds its sandboxes' lives, at most the
	// daemon's maximum lifetime (0: the daemon's).
	MaxLifetimeSeconds int64 `json:"max_lifetime_seconds,omitempty"`
}

// decodeSettings reads stored settings strictly: a field this daemon
// does not know fails (the project's creates are refused), rather than a
// setting silently dropped.
func decodeSettings(raw []byte) (Settings, error) {
	var s Settings
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("the project's stored settings cannot be read (%v): its creates are refused until they are set again: %w", err, errdefs.ErrUnsupported)
	}
	return s, nil
}

// Settings are project id's, for a caller who sees the project.
func (p *Projects) Settings(ctx context.Context, id string) (Settings, error) {
	if err := p.attached(); err != nil {
		return Settings{}, err
	}
	r, err := p.st.GetProject(ctx, id)
	if err != nil || !tenant.Of(ctx).Sees(id) {
		return Settings{}, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	return decodeSettings(r.Settings)
}

// SetSettings replaces project id's settings and records
// project.settings: its admin's or the operator's. The lifetime bound is
// at most the daemon's (its ceiling); sandboxes already live keep
// theirs.
func (p *Projects) SetSettings(ctx context.Context, id string, s Settings) (Settings, error) {
	if err := p.attached(); err != nil {
		return Settings{}, err
	}
	who := tenant.Of(ctx)
	if !who.IsOperator() && !(who.Role.AtLeast(tenant.Admin) && who.Project == id) {
		return Settings{}, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	if r, err := p.st.GetProject(ctx, id); err != nil || r.Removed != nil {
		return Settings{}, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	if s.DefaultTemplate != "" {
		if err := template.ValidName(s.DefaultTemplate); err != nil {
			return Settings{}, fmt.Errorf("default template %q: %w", s.DefaultTemplate, errdefs.ErrInvalid)
		}
	}
	max := p.maxLife()
	switch {
	case s.MaxLifetimeSeconds < 0 || s.MaxLifetimeSeconds > int64(100*365*24*time.Hour/time.Second):
		return Settings{}, fmt.Errorf("max_lifetime_seconds %d is not a lifetime (0: the daemon's): %w", s.MaxLifetimeSeconds, errdefs.ErrInvalid)
	case max > 0 && time.Duration(s.MaxLifetimeSeconds)*time.Second > max:
		return Settings{}, fmt.Errorf("max_lifetime_seconds %d is over the daemon's maximum lifetime (%s, airlock serve's), its ceiling: %w", s.MaxLifetimeSeconds, max, errdefs.ErrInvalid)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return Settings{}, err
	}
	if s == (Settings{}) {
		raw = nil
	}
	if err := p.record(ctx, audit.Entry{Kind: "project.settings", Payload: map[string]any{"project": id, "settings": s}}); err != nil {
		return Settings{}, err
	}
	if err := p.st.SetProjectSettings(ctx, id, raw); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// CreateDefaults gives the core a create's defaults for project
// (hook.Defaulter).
func (p *Projects) CreateDefaults(ctx context.Context, project string) (hook.CreateDefaults, error) {
	if err := p.attached(); err != nil {
		return hook.CreateDefaults{}, err
	}
	r, err := p.st.GetProject(ctx, project)
	if err != nil {
		return hook.CreateDefaults{}, fmt.Errorf("project %q: %w", project, errdefs.ErrNotFound)
	}
	s, err := decodeSettings(r.Settings)
	if err != nil {
		return hook.CreateDefaults{}, err
	}
	return hook.CreateDefaults{Template: s.DefaultTemplate, MaxLifetime: time.Duration(s.MaxLifetimeSeconds) * time.Second}, nil
}
