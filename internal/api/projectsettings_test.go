package api

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/wire"
)

// A project's settings, as attacks: its lifetime bound cannot pass the
// daemon's (the ceiling), binds its sandboxes at create and at a later
// timeout, and not another project's; a default template of another
// project's snapshot starts nothing (answered as a missing template);
// only its admin or the operator sets them.
func TestProjectSettings(t *testing.T) {
	tn := newTenantsQuotas(t, "", quotas.Config{}, func(c *manager.Config) { c.MaxLifetime = 2 * time.Hour })
	tn.makeRed()
	red, blue := tn.keys["proj-red"], tn.keys["proj-blue"]
	const path = "/v1/projects/proj-red/settings"
	tn.must(red[tenant.Admin], "PUT", path, wire.ProjectSettingsRequest{MaxLifetimeSeconds: 3 * 3600}, 400, nil)
	tn.must(red[tenant.Agent], "PUT", path, wire.ProjectSettingsRequest{MaxLifetimeSeconds: 600}, 403, nil)
	tn.must(blue[tenant.Admin], "PUT", path, wire.ProjectSettingsRequest{MaxLifetimeSeconds: 600}, 404, nil)
	var ps wire.ProjectSettings
	tn.must(red[tenant.Admin], "PUT", path, wire.ProjectSettingsRequest{MaxLifetimeSeconds: 600, DefaultTemplate: "red-snap"}, 200, &ps)
	tn.must(red[tenant.Agent], "GET", path, nil, 200, &ps)
	if ps.MaxLifetimeSeconds != 600 || ps.DefaultTemplate != "red-snap" {
		t.Fatalf("settings: %+v", ps)
	}
	tn.must(blue[tenant.Agent], "GET", path, nil, 404, nil)

	var sb wire.Sandbox
	tn.must(red[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	if sb.Template != "red-snap" {
		t.Errorf("red's create without a template: %q, want the project's default", sb.Template)
	}
	if life := sb.Expires.Sub(sb.Created); sb.Expires.IsZero() || life > 600*time.Second || life < 590*time.Second {
		t.Errorf("red's sandbox lives %v (expires %v), want the project's 10 min", life, sb.Expires)
	}
	tn.must(red[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{TTLSeconds: 3600}, 400, nil)
	hour := int64(3600)
	tn.must(red[tenant.Agent], "POST", "/v1/sandboxes/"+sb.ID+"/timeout", wire.TimeoutRequest{TTLSeconds: &hour}, 400, nil)

	var bsb wire.Sandbox
	tn.must(blue[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{TTLSeconds: 3600}, 201, &bsb)
	if bsb.Template != "host" {
		t.Errorf("blue's default template: %q", bsb.Template)
	}
	// blue names red's snapshot as its default: nothing starts from it,
	// and the answer is that of a template that does not exist
	tn.must(blue[tenant.Admin], "PUT", "/v1/projects/proj-blue/settings", wire.ProjectSettingsRequest{DefaultTemplate: "red-snap"}, 200, nil)
	c1, b1 := tn.call(blue[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{})
	c2, b2 := tn.call(blue[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Template: "non-snap"})
	if b1 = bytes.ReplaceAll(b1, []byte("red-snap"), []byte("non-snap")); c1 != http.StatusNotFound || c1 != c2 || !bytes.Equal(b1, b2) {
		t.Errorf("blue's default of red's snapshot: %d %s; a missing template: %d %s", c1, b1, c2, b2)
	}
}
