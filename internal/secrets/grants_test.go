package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/store"
)

// withSecret is a fixture with DEPLOY_TOKEN set and a running sandbox.
func withSecret(t *testing.T, configure func(*manager.Config)) (*fixture, string) {
	t.Helper()
	f := onFake(t, filepath.Join(t.TempDir(), "secrets.key"), configure)
	if _, err := f.s.Set(context.Background(), "", "DEPLOY_TOKEN", []byte(value)); err != nil {
		t.Fatal(err)
	}
	sb, err := f.m.Create(sandbox.WithActor(context.Background(), "operator:test"), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return f, sb.ID
}

// An env grant through the whole exec pipeline: the policy counts the
// granted variable as no secret access, the command gets the value (the
// "secrets" stage), the stored output and the record never hold it, the
// exec's start names the grant (not the variable among env_names); once
// the grant expires or is revoked, commands lose it and the policy
// refuses to read it again.
func TestEnvGrantReachesCommands(t *testing.T) {
	ctx := sandbox.WithActor(context.Background(), "operator:test")
	f, id := withSecret(t, nil)
	if _, _, err := f.sh(t, id, `echo "[$DEPLOY_TOKEN]"`); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("reading the variable before the grant: %v, want denied", err)
	}
	g, err := f.s.Grant(ctx, "DEPLOY_TOKEN", GrantRequest{SandboxID: id, Hosts: []string{"Deploy.Example.Test.", "deploy.example.test"}, TTLSeconds: 600})
	if err != nil {
		t.Fatal(err)
	}
	if g.Mode != "env" || g.Env != "DEPLOY_TOKEN" || g.State != "active" || g.CreatedBy != "operator:test" || g.Placeholder != "" ||
		!slices.Equal(g.Hosts, []string{"deploy.example.test"}) || g.Expires.Sub(g.Created) != 10*time.Minute {
		t.Errorf("grant: %+v", g)
	}
	out, execID, err := f.sh(t, id, `echo "[$DEPLOY_TOKEN]"`)
	if err != nil || out != "["+value+"]\n" {
		t.Fatalf("the granted command: %q %v", out, err)
	}
	stored, err := f.st.GetOutput(ctx, execID, "stdout")
	if err != nil || strings.Contains(string(stored), value) || !strings.Contains(string(stored), "[REDACTED") {
		t.Errorf("stored output %q %v: want the value redacted", stored, err)
	}
	uses := decodeUses(t, f.execStart(t, execID))
	if len(uses) != 1 || uses[0]["grant"] != g.ID || uses[0]["env"] != "DEPLOY_TOKEN" || uses[0]["mode"] != "env" {
		t.Errorf("exec.start secrets: %v", uses)
	}
	if evs := f.events(t, "secret.grant"); len(evs) != 1 || evs[0].SandboxID != id || !strings.Contains(string(evs[0].Payload), g.ID) {
		t.Errorf("secret.grant events: %+v", evs)
	}
	f.clk.Add(11 * time.Minute)
	if out, _, err := f.sh(t, id, `echo "[${DEPLOY_TOKEN:-}]"`); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("after the grant expired: %q %v, want denied", out, err)
	}
	if l, err := f.s.Grants(ctx, id); err != nil || len(l) != 1 || l[0].State != "expired" {
		t.Errorf("grants after expiry: %+v %v", l, err)
	}
	g2, err := f.s.Grant(ctx, "DEPLOY_TOKEN", GrantRequest{SandboxID: id, Env: "TOKEN_IN", Hosts: []string{"*.example.test"}})
	if err != nil || g2.Expires.Sub(g2.Created) != DefaultGrantFor {
		t.Fatalf("second grant: %+v %v", g2, err)
	}
	if out, _, err := f.sh(t, id, `echo "[$TOKEN_IN]"`); err != nil || out != "["+value+"]\n" {
		t.Errorf("under another name: %q %v", out, err)
	}
	if err := f.s.Revoke(ctx, g2.ID); err != nil {
		t.Fatal(err)
	}
	if out, _, err := f.sh(t, id, `echo "[$TOKEN_IN]"`); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("reading the variable after revoke: %q %v, want denied", out, err)
	}
	if env, uses, err := f.s.SecretEnv(ctx, hook.SandboxRef{ID: id}); len(env) != 0 || len(uses) != 0 || err != nil {
		t.Errorf("secret env after revoke: %q %v %v", env, uses, err)
	}
	if err := f.s.Revoke(ctx, "sg-none"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("revoke an unknown grant: %v", err)
	}
	if l, err := f.s.Grants(ctx, ""); err != nil || len(l) != 2 || l[0].ID != g2.ID || l[0].State != "revoked" {
		t.Errorf("all grants: %+v %v", l, err)
	}
	if evs := f.events(t, "secret.revoke"); len(evs) != 1 || !strings.Contains(string(evs[0].Payload), g2.ID) {
		t.Errorf("secret.revoke events: %d", len(evs))
	}
	for _, e := range f.events(t, "") {
		if strings.Contains(string(e.Payload), value) {
			t.Errorf("event %s holds the value: %s", e.Kind, e.Payload)
		}
	}
}

// A deleted secret's grants go with it: commands stop getting it.
func TestDeletedSecretLeavesCommands(t *testing.T) {
	ctx := context.Background()
	f, id := withSecret(t, nil)
	if _, err := f.s.Grant(ctx, "DEPLOY_TOKEN", GrantRequest{SandboxID: id, Hosts: []string{"a.test"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Delete(ctx, "", "DEPLOY_TOKEN"); err != nil {
		t.Fatal(err)
	}
	if env, _, err := f.s.SecretEnv(ctx, hook.SandboxRef{ID: id}); len(env) != 0 || err != nil {
		t.Errorf("secret env after delete: %q %v", env, err)
	}
	if vars := f.s.GrantedVars(ctx, id); len(vars) != 0 {
		t.Errorf("granted vars after delete: %v", vars)
	}
}

// What a grant may not ask for, and for whom it cannot be made.
func TestGrantRefusals(t *testing.T) {
	ctx := context.Background()
	f, id := withSecret(t, nil)
	ok := GrantRequest{SandboxID: id, Hosts: []string{"a.test"}}
	with := func(change func(*GrantRequest)) GrantRequest { r := ok; change(&r); return r }
	for _, tc := range []struct {
		name   string
		secret string
		req    GrantRequest
		want   error
	}{
		{"unknown secret", "NOPE", ok, errdefs.ErrNotFound},
		{"neither sandbox nor task", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.SandboxID = "" }), errdefs.ErrInvalid},
		{"both sandbox and task", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.TaskID = "t-1" }), errdefs.ErrInvalid},
		{"unknown task", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.SandboxID, r.TaskID = "", "t-none" }), errdefs.ErrNotFound},
		{"unknown sandbox", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.SandboxID = "sb-none" }), errdefs.ErrNotFound},
		{"bad mode", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Mode = "file" }), errdefs.ErrInvalid},
		{"broker without egress", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Mode = "broker" }), errdefs.ErrUnsupported},
		{"bad env", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Env = "A=B" }), errdefs.ErrInvalid},
		{"no hosts", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Hosts = nil }), errdefs.ErrInvalid},
		{"bad host", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Hosts = []string{"a b.test"} }), errdefs.ErrInvalid},
		{"inner wildcard", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Hosts = []string{"a.*.test"} }), errdefs.ErrInvalid},
		{"long host", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Hosts = []string{strings.Repeat("a.", 127) + "test"} }), errdefs.ErrInvalid},
		{"headers in env mode", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.Headers = []string{"X-Api-Key"} }), errdefs.ErrInvalid},
		{"ttl over the max", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.TTLSeconds = int64(MaxGrantFor/time.Second) + 1 }), errdefs.ErrInvalid},
		{"negative ttl", "DEPLOY_TOKEN", with(func(r *GrantRequest) { r.TTLSeconds = -1 }), errdefs.ErrInvalid},
	} {
		if _, err := f.s.Grant(ctx, tc.secret, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := f.m.Destroy(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Grant(ctx, "DEPLOY_TOKEN", ok); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("a stopped sandbox: %v, want a conflict", err)
	}
	if l, err := f.s.Grants(ctx, ""); err != nil || len(l) != 0 {
		t.Errorf("a refused grant was kept: %+v %v", l, err)
	}
}

// openTask is a task record of the sandbox (the tasks feature's own
// record: this module reads only its state and sandbox).
func openTask(t *testing.T, st *store.Store, id, sandboxID, state string) {
	t.Helper()
	if err := st.PutTask(context.Background(), &store.Task{ID: id, SandboxID: sandboxID, State: state, Spec: json.RawMessage(`{}`), Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// A grant to a task is to its sandbox; the task's end (TaskEndHook)
// revokes it, on the record with the reason, and leaves the sandbox's
// own grants; a grant to a task that is not open is refused.
func TestTaskGrantsEndWithTheTask(t *testing.T) {
	ctx := context.Background()
	f, id := withSecret(t, nil)
	openTask(t, f.st, "t-1", id, "open")
	openTask(t, f.st, "t-2", id, "finished")
	tg, err := f.s.Grant(ctx, "DEPLOY_TOKEN", GrantRequest{TaskID: "t-1", Hosts: []string{"a.test"}})
	if err != nil || tg.SandboxID != id || tg.TaskID != "t-1" {
		t.Fatalf("task grant: %+v %v", tg, err)
	}
	sg, err := f.s.Grant(ctx, "DEPLOY_TOKEN", GrantRequest{SandboxID: id, Env: "OWN", Hosts: []string{"a.test"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Grant(ctx, "DEPLOY_TOKEN", GrantRequest{TaskID: "t-2", Hosts: []string{"a.test"}}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("grant to a finished task: %v, want a conflict", err)
	}
	if vars := f.s.GrantedVars(ctx, id); !slices.Equal(vars, []string{"DEPLOY_TOKEN", "OWN"}) && !slices.Equal(vars, []string{"OWN", "DEPLOY_TOKEN"}) {
		t.Errorf("granted vars: %v", vars)
	}
	if err := f.s.OnTaskEnd(ctx, hook.SandboxRef{ID: id, TaskID: "t-1"}); err != nil {
		t.Fatal(err)
	}
	l, err := f.s.Grants(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range l {
		if want := map[string]string{tg.ID: "revoked", sg.ID: "active"}[g.ID]; g.State != want {
			t.Errorf("grant %s (task %q): %s, want %s", g.ID, g.TaskID, g.State, want)
		}
	}
	revokes := f.events(t, "secret.revoke")
	if len(revokes) != 1 || revokes[0].TaskID != "t-1" || !strings.Contains(string(revokes[0].Payload), `"reason":"task finished"`) {
		t.Errorf("secret.revoke events: %+v", revokes)
	}
	if err := f.s.EndTaskGrants(ctx, id, "t-1"); err != nil || len(f.events(t, "secret.revoke")) != 1 {
		t.Errorf("ending again: %v, %d revokes", err, len(f.events(t, "secret.revoke")))
	}
	if out, _, err := f.sh(t, id, `echo "[${OWN:-}]"`); err != nil || out != "["+value+"]\n" {
		t.Errorf("the sandbox's own grant after the task: %q %v", out, err)
	}
}

// A brokered grant: the sandbox gets only a placeholder, the egress
// policy gets the value for the grant's hosts and headers; what the
// manager shows of that policy leaves it out. The fake backend has no
// sandbox network, so the grant is stored as Grant stores one with the
// egress service (Grant refuses it without: TestGrantRefusals; the
// proxy's use of it is internal/api's egress tests).
func TestBrokeredGrant(t *testing.T) {
	ctx := context.Background()
	f, id := withSecret(t, nil)
	now := f.clk.Now()
	g := &store.SecretGrant{ID: "sg-b1", Secret: "DEPLOY_TOKEN", SandboxID: id, Mode: "broker", Env: "DEPLOY_TOKEN", Hosts: []string{"api.example.test"},
		Headers: []string{"X-Api-Key"}, Placeholder: "airlock-brokered-00ff", Created: now, Expires: now.Add(time.Hour), CreatedBy: "operator:test"}
	if err := f.st.PutSecretGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if out, execID, err := f.sh(t, id, `echo "[$DEPLOY_TOKEN]"`); err != nil || out != "["+g.Placeholder+"]\n" {
		t.Errorf("the sandbox's variable: %q %v, want the placeholder", out, err)
	} else if uses := decodeUses(t, f.execStart(t, execID)); len(uses) != 1 || uses[0]["mode"] != "broker" {
		t.Errorf("exec.start secrets: %v", uses)
	}
	bs, err := f.s.BrokeredSecrets(ctx, id)
	if err != nil || len(bs) != 1 || bs[0].Value != value || bs[0].Placeholder != g.Placeholder || bs[0].ID != g.ID ||
		!slices.Equal(bs[0].Hosts, g.Hosts) || !slices.Equal(bs[0].Headers, g.Headers) {
		t.Fatalf("brokered secrets: %+v %v", bs, err)
	}
	p, err := f.net.EgressPolicy(ctx, id)
	if err != nil || len(p.Secrets) != 1 || p.Secrets[0].ID != g.ID || p.Secrets[0].Value != "" {
		t.Errorf("the sandbox's egress policy: %+v %v", p, err)
	}
	if err := f.s.Revoke(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if p, err := f.net.EgressPolicy(ctx, id); err != nil || len(p.Secrets) != 0 {
		t.Errorf("the egress policy after revoke: %+v %v", p, err)
	}
	if bs, err := f.s.BrokeredSecrets(ctx, id); err != nil || len(bs) != 0 {
		t.Errorf("brokered secrets after revoke: %+v %v", bs, err)
	}
}
