package api

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/sdk"
)

// The SDK's projects and keys against the API on the fake backend: the
// operator (the socket's handler) makes a project and its admin key; the
// admin, over TCP, sees its project alone, makes and rotates its own
// keys and nothing of another project's; removing the project revokes
// them.
func TestSDKProjectsAndKeys(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	opSrv := httptest.NewServer(tn.srv) // not TCP(): the operator's handler
	t.Cleanup(opSrv.Close)
	op, err := sdk.New(sdk.WithBaseURL(opSrv.URL))
	if err != nil {
		t.Fatal(err)
	}
	keyClient := func(key string) *sdk.Client {
		c, err := sdk.New(sdk.WithBaseURL(tn.tcp.URL), sdk.WithAPIKey(key))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	p, err := op.CreateProject(ctx, "proj-green")
	if err != nil || p.ID != "proj-green" {
		t.Fatalf("CreateProject: %+v %v", p, err)
	}
	if _, err := op.CreateProject(ctx, "proj-green"); !sdk.IsConflict(err) {
		t.Errorf("CreateProject again: %v", err)
	}
	if ps, err := op.ListProjects(ctx); err != nil || len(ps) != 4 { // default, red, blue, green
		t.Errorf("the operator's ListProjects: %+v %v", ps, err)
	}
	ak, err := op.CreateAPIKey(ctx, "green-admin", sdk.KeyProject("proj-green"), sdk.KeyRole("admin"))
	if err != nil || ak.Project != "proj-green" || ak.Role != "admin" || ak.Key == "" {
		t.Fatalf("CreateAPIKey: %+v %v", ak, err)
	}
	admin := keyClient(ak.Key)
	if ps, err := admin.ListProjects(ctx); err != nil || len(ps) != 1 || ps[0].ID != "proj-green" {
		t.Errorf("the admin's ListProjects: %+v %v", ps, err)
	}
	if g, err := admin.GetProject(ctx, "proj-green"); err != nil || g.ID != "proj-green" {
		t.Errorf("GetProject of its own: %+v %v", g, err)
	}
	if _, err := admin.GetProject(ctx, "proj-red"); !sdk.IsNotFound(err) {
		t.Errorf("GetProject of red's: %v", err)
	}
	if _, err := admin.CreateProject(ctx, "proj-mine"); !sdk.IsDenied(err) {
		t.Errorf("a key makes a project: %v", err)
	}
	if _, err := admin.CreateAPIKey(ctx, "x", sdk.KeyProject("proj-red")); !sdk.IsNotFound(err) {
		t.Errorf("the admin makes a key of red's: %v", err)
	}
	if _, err := admin.CreateAPIKey(ctx, "x", sdk.KeyRole("operator")); !sdk.IsInvalid(err) {
		t.Errorf("an operator key: %v", err)
	}
	agent, err := admin.CreateE2BAPIKey(ctx, "green-agent")
	if err != nil || agent.Project != "proj-green" || agent.Role != "agent" || len(agent.Key) != 44 {
		t.Fatalf("the admin's agent key: %+v %v", agent, err)
	}
	// rotation with an overlap: both keys work, the old one has an end
	rot, err := admin.RotateAPIKey(ctx, agent.ID, time.Hour)
	if err != nil || rot.Key == "" || rot.ID == agent.ID || rot.Project != "proj-green" || rot.Role != "agent" {
		t.Fatalf("RotateAPIKey: %+v %v", rot, err)
	}
	keys, err := admin.ListAPIKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var old *sdk.APIKey
	for i := range keys {
		if keys[i].ID == agent.ID {
			old = &keys[i]
		}
	}
	if old == nil || old.Expires == nil || time.Until(*old.Expires) > time.Hour || time.Until(*old.Expires) < 50*time.Minute {
		t.Errorf("the rotated key: %+v", old)
	}
	for _, k := range []string{agent.Key, rot.Key} {
		if _, err := keyClient(k).ListSandboxes(ctx, ""); err != nil {
			t.Errorf("a key in the overlap: %v", err)
		}
	}
	if _, err := admin.RotateAPIKey(ctx, rot.ID, time.Hour, sdk.KeyRole("admin")); !sdk.IsInvalid(err) {
		t.Errorf("a rotation that asks for a role: %v", err)
	}
	if _, err := admin.RotateAPIKey(ctx, tn.keysID(t, "proj-red"), 0); !sdk.IsNotFound(err) {
		t.Errorf("the admin rotates red's key: %v", err)
	}
	// without an overlap the old key stops now
	if _, err := admin.RotateAPIKey(ctx, rot.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := keyClient(rot.Key).ListSandboxes(ctx, ""); err == nil {
		t.Error("a key rotated without overlap still works")
	}
	if err := op.DeleteProject(ctx, "proj-green"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ListSandboxes(ctx, ""); err == nil {
		t.Error("a removed project's key still works")
	}
	if err := op.DeleteProject(ctx, "default"); err == nil {
		t.Error("the default project was removed")
	}
}

// keysID is the id of one of project's keys, read as the operator.
func (tn *tenants) keysID(t *testing.T, project string) string {
	t.Helper()
	keys, err := tn.srv.keys.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Project == project {
			return k.ID
		}
	}
	t.Fatalf("no key of %s", project)
	return ""
}
