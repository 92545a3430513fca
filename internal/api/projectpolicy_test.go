package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/wire"
)

const projectPolicyFile = `classes: {read: allow, network: ask}
templates:
  host:
    classes: {network: deny}
`

func decideAs(tn *tenants, key, sb string, argv ...string) string {
	tn.t.Helper()
	var d wire.Decision
	tn.must(key, "POST", "/v1/sandboxes/"+sb+"/policy/check", wire.CheckRequest{Argv: argv, Cwd: "/workspace"}, 200, &d)
	return d.Action
}

// The attacks on a project's own policy layer: an admin cannot set one
// that relaxes the daemon's policy file; an agent cannot set one at all;
// another project's admin cannot reach it; a layer within the file never
// loosens a template's stricter section (only what tightens applies, and
// the sandbox's sources say what did not); an agent's own layer cannot
// relax the project's.
func TestProjectPolicyOnlyTightens(t *testing.T) {
	tn := newTenantsWith(t, projectPolicyFile)
	red, blue := tn.keys["proj-red"], tn.keys["proj-blue"]
	const path = "/v1/projects/proj-red/policy"
	code, b := tn.call(red[tenant.Admin], "PUT", path, wire.PolicyLayer{Classes: map[string]string{"network": "allow"}})
	if code != 403 || !strings.Contains(string(b), `network ask-\u003eallow`) {
		t.Fatalf("an admin's layer relaxing the file: %d %s", code, b)
	}
	tn.must(red[tenant.Admin], "PUT", path, wire.PolicyLayer{Egress: json.RawMessage(`{"grant":["public_web"]}`)}, 403, nil)
	tighten := wire.PolicyLayer{Classes: map[string]string{"network": "ask", "read": "ask"},
		Egress: json.RawMessage(`{"rules":[{"id":"no-x","action":"deny","hosts":["x.example.test"]}]}`)}
	tn.must(red[tenant.Agent], "PUT", path, tighten, 403, nil)
	tn.must(red[tenant.Reviewer], "PUT", path, tighten, 403, nil)
	tn.must(blue[tenant.Admin], "PUT", path, tighten, 404, nil)
	var pp wire.ProjectPolicy
	tn.must(red[tenant.Admin], "PUT", path, tighten, 200, &pp)
	if pp.Policy == nil || pp.Policy.Classes["read"] != "ask" {
		t.Fatalf("set: %+v", pp)
	}
	tn.must(red[tenant.Agent], "GET", path, nil, 200, &pp)
	tn.must(blue[tenant.Agent], "GET", path, nil, 404, nil)

	var rsb, bsb wire.Sandbox
	tn.must(red[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Template: "host"}, 201, &rsb)
	tn.must(blue[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Template: "host"}, 201, &bsb)
	src := "project-policy:proj-red (not over the template: network deny->ask)"
	if !slices.Contains(rsb.PolicySources, src) || slices.ContainsFunc(bsb.PolicySources, func(s string) bool { return strings.HasPrefix(s, "project-policy:") }) {
		t.Fatalf("sources: red %v, blue %v", rsb.PolicySources, bsb.PolicySources)
	}
	if a := decideAs(tn, red[tenant.Agent], rsb.ID, "curl", "https://example.test/"); a != wire.ActionDeny {
		t.Errorf("red's network under the template's deny: %s (the project's ask must not loosen it)", a)
	}
	if a := decideAs(tn, red[tenant.Agent], rsb.ID, "cat", "README"); a != wire.ActionAsk {
		t.Errorf("red's read: %s, want the project's ask", a)
	}
	if a := decideAs(tn, blue[tenant.Agent], bsb.ID, "cat", "README"); a != wire.ActionAllow {
		t.Errorf("blue's read: %s, want the file's allow", a)
	}
	var eg json.RawMessage
	tn.must(red[tenant.Agent], "GET", "/v1/sandboxes/"+rsb.ID+"/egress", nil, 200, &eg)
	if !strings.Contains(string(eg), "no-x") {
		t.Errorf("red's egress has no project deny rule: %s", eg)
	}
	relax := &wire.PolicyLayer{Classes: map[string]string{"read": "allow"}}
	tn.must(red[tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Template: "host", Policy: relax}, 403, nil)

	tn.must(red[tenant.Admin], "PUT", path, wire.PolicyLayer{}, 200, nil)
	var cleared wire.ProjectPolicy
	tn.must(red[tenant.Admin], "GET", path, nil, 200, &cleared)
	if cleared.Policy != nil || cleared.Project != "proj-red" {
		t.Errorf("cleared: %+v", cleared)
	}
}
