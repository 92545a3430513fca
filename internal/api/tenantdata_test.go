package api

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/wire"
)

// Attack: blue's reviewer reads the audit log with filters naming red's
// sandbox, exec, task and project. Each answer is the one for an id that
// does not exist, and no answer holds an event of red's; red's reviewer
// reads its own; the one chain verifies after the mixed run.
func TestAuditQueryHidesAnotherProject(t *testing.T) {
	tn := newTenants(t)
	red := tn.makeRed()
	blueAgent := tn.keys["proj-blue"][tenant.Agent]
	var sb wire.Sandbox
	tn.must(blueAgent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	if code, b := tn.call(blueAgent, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"true"}}); code != 200 {
		t.Fatalf("blue's exec: %d %s", code, b)
	}
	blue := tn.keys["proj-blue"][tenant.Reviewer]
	for _, q := range [][2]string{
		{"sandbox", red.ids[tenant.Sandbox]}, {"exec", red.exec}, {"task", red.ids[tenant.Task]}, {"project", "proj-red"},
	} {
		none := missing[tenant.Sandbox]
		c1, b1 := tn.call(blue, "GET", "/v1/audit?"+q[0]+"="+q[1], nil)
		c2, b2 := tn.call(blue, "GET", "/v1/audit?"+q[0]+"="+none, nil)
		if c1 != 200 || c1 != c2 || !bytes.Equal(bytes.ReplaceAll(b1, []byte(q[1]), []byte(none)), b2) {
			t.Errorf("?%s= red's: %d %s; a missing one: %d %s", q[0], c1, b1, c2, b2)
		}
	}
	var all wire.AuditEventList
	tn.must(blue, "GET", "/v1/audit", nil, 200, &all)
	for _, e := range all.Events {
		if e.Project != "proj-blue" {
			t.Errorf("blue's reviewer reads event %d (%s) of project %q", e.Seq, e.Kind, e.Project)
		}
	}
	keys := 0
	for _, e := range all.Events {
		if e.Kind == "apikey.create" {
			keys++
		}
	}
	if keys != len(tenant.Roles) {
		t.Errorf("blue's reviewer reads %d apikey.create events (the operator made its %d keys)", keys, len(tenant.Roles))
	}
	var own wire.AuditEventList
	tn.must(tn.keys["proj-red"][tenant.Reviewer], "GET", "/v1/audit?sandbox="+red.ids[tenant.Sandbox], nil, 200, &own)
	if len(own.Events) == 0 {
		t.Error("red's reviewer reads none of its sandbox's events")
	}
	var ops, reds wire.AuditEventList
	tn.must("", "GET", "/v1/audit?project=proj-red", nil, 200, &ops)
	tn.must(tn.keys["proj-red"][tenant.Reviewer], "GET", "/v1/audit", nil, 200, &reds)
	if len(ops.Events) != len(reds.Events) || len(reds.Events) <= len(own.Events) {
		t.Errorf("the operator's ?project=proj-red: %d events, red's reviewer %d (%d of its sandbox)", len(ops.Events), len(reds.Events), len(own.Events))
	}
	var rep wire.AuditReport
	tn.must("", "GET", "/v1/audit/verify", nil, 200, &rep)
	if len(rep.Problems) != 0 || rep.Events == 0 {
		t.Errorf("the chain after a mixed run: %+v", rep)
	}
	var blob []byte
	if _, blob = tn.call(tn.keys["proj-red"][tenant.Reviewer], "GET", "/v1/audit/blobs/"+red.blob, nil); !strings.HasPrefix(string(blob), "red\n") {
		t.Errorf("red's reviewer reads its blob as %.40q", blob)
	}
}

// Attack: blue's admin grants red's secret to its own sandbox, and its
// own secret to red's sandbox: the answers are those for a missing
// secret and a missing sandbox. Blue's secret of the same name as red's
// is blue's own, and blue lists only its own.
func TestSecretRoutesStayInTheirProject(t *testing.T) {
	tn := newTenants(t)
	red := tn.makeRed()
	blueAgent, blue := tn.keys["proj-blue"][tenant.Agent], tn.keys["proj-blue"][tenant.Admin]
	var sb wire.Sandbox
	tn.must(blueAgent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	hosts := []string{"a.test"}
	c1, b1 := tn.call(blue, "POST", "/v1/secrets/"+red.secret+"/grants", wire.SecretGrantRequest{SandboxID: sb.ID, Hosts: hosts})
	c2, b2 := tn.call(blue, "POST", "/v1/secrets/"+missingSecret+"/grants", wire.SecretGrantRequest{SandboxID: sb.ID, Hosts: hosts})
	if c1 != 404 || c1 != c2 || !bytes.Equal(bytes.ReplaceAll(b1, []byte(red.secret), []byte(missingSecret)), b2) {
		t.Errorf("red's secret to blue's sandbox: %d %s; a missing secret: %d %s", c1, b1, c2, b2)
	}
	var info wire.SecretInfo
	tn.must(blue, "PUT", "/v1/secrets/"+red.secret, wire.SecretValue{Value: "blue-token-value-0123456789"}, 200, &info)
	redSB := red.ids[tenant.Sandbox]
	c1, b1 = tn.call(blue, "POST", "/v1/secrets/"+red.secret+"/grants", wire.SecretGrantRequest{SandboxID: redSB, Hosts: hosts})
	c2, b2 = tn.call(blue, "POST", "/v1/secrets/"+red.secret+"/grants", wire.SecretGrantRequest{SandboxID: missing[tenant.Sandbox], Hosts: hosts})
	if c1 != 404 || c1 != c2 || !bytes.Equal(bytes.ReplaceAll(b1, []byte(redSB), []byte(missing[tenant.Sandbox])), b2) {
		t.Errorf("blue's secret to red's sandbox: %d %s; a missing sandbox: %d %s", c1, b1, c2, b2)
	}
	var g wire.SecretGrant
	tn.must(blue, "POST", "/v1/secrets/"+red.secret+"/grants", wire.SecretGrantRequest{SandboxID: sb.ID, Hosts: hosts}, 201, &g)
	if g.Project != "proj-blue" || info.Project != "proj-blue" {
		t.Errorf("blue's secret %+v and grant %+v", info, g)
	}
	var secs wire.SecretList
	tn.must(blue, "GET", "/v1/secrets", nil, 200, &secs)
	var grants wire.SecretGrantList
	tn.must(blue, "GET", "/v1/secret-grants", nil, 200, &grants)
	if len(secs.Secrets) != 1 || secs.Secrets[0].Project != "proj-blue" || len(grants.Grants) != 1 || grants.Grants[0].ID != g.ID {
		t.Errorf("blue lists secrets %+v, grants %+v", secs.Secrets, grants.Grants)
	}
	tn.must("", "GET", "/v1/secrets", nil, 200, &secs)
	if len(secs.Secrets) != 2 {
		t.Errorf("the operator lists %+v, want red's and blue's", secs.Secrets)
	}
}
