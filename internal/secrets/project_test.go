package secrets

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// twoProjects is a fixture with projects red and blue, a running
// sandbox of each, red's secret RED_ONLY and a secret SHARED in both
// (of different values).
type twoProjects struct {
	*fixture
	redSB, blueSB string
}

func key(project string, role tenant.Role) context.Context {
	return sandbox.WithActor(tenant.With(context.Background(), tenant.Principal{Project: project, Role: role, KeyID: "k-" + project}), "key:"+project)
}

func newTwoProjects(t *testing.T) *twoProjects {
	t.Helper()
	f := onFake(t, filepath.Join(t.TempDir(), "secrets.key"), nil)
	tp := &twoProjects{fixture: f}
	ctx := context.Background()
	for _, p := range []string{"red", "blue"} {
		if err := f.st.PutProject(ctx, &store.Project{ID: p, Created: f.clk.Now()}); err != nil {
			t.Fatal(err)
		}
		sb, err := f.m.Create(key(p, tenant.Agent), sandbox.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if sb.Project != p {
			t.Fatalf("%s's sandbox is of %q", p, sb.Project)
		}
		if _, err := f.s.Set(key(p, tenant.Admin), "", "SHARED", []byte(p+"-value-0123456789")); err != nil {
			t.Fatal(err)
		}
		if p == "red" {
			tp.redSB = sb.ID
		} else {
			tp.blueSB = sb.ID
		}
	}
	if _, err := f.s.Set(key("red", tenant.Admin), "", "RED_ONLY", []byte("red-only-0123456789")); err != nil {
		t.Fatal(err)
	}
	return tp
}

// sameMissing fails unless err1 (about the foreign id) is err2 (about a
// missing one) word for word, a not-found.
func sameMissing(t *testing.T, what string, err1, err2 error, foreign, absent string) {
	t.Helper()
	if err1 == nil || err2 == nil || !errors.Is(err1, errdefs.ErrNotFound) ||
		strings.ReplaceAll(err1.Error(), foreign, absent) != err2.Error() {
		t.Errorf("%s: %v; for a missing one: %v", what, err1, err2)
	}
}

// Attack: blue's admin grants red's secret name to its own sandbox, and
// its own secret to red's sandbox: each is refused as a missing secret
// or sandbox would be. A name both projects hold resolves to the
// caller's own: blue's command gets blue's value.
func TestGrantsStayInTheirProject(t *testing.T) {
	tp := newTwoProjects(t)
	blue := key("blue", tenant.Admin)
	hosts := []string{"a.test"}
	_, err1 := tp.s.Grant(blue, "RED_ONLY", GrantRequest{SandboxID: tp.blueSB, Hosts: hosts})
	_, err2 := tp.s.Grant(blue, "NO_SUCH", GrantRequest{SandboxID: tp.blueSB, Hosts: hosts})
	sameMissing(t, "red's secret to blue's sandbox", err1, err2, "RED_ONLY", "NO_SUCH")
	_, err1 = tp.s.Grant(blue, "SHARED", GrantRequest{SandboxID: tp.redSB, Hosts: hosts})
	_, err2 = tp.s.Grant(blue, "SHARED", GrantRequest{SandboxID: "sb-000000000000", Hosts: hosts})
	sameMissing(t, "blue's secret to red's sandbox", err1, err2, tp.redSB, "sb-000000000000")

	g, err := tp.s.Grant(blue, "SHARED", GrantRequest{SandboxID: tp.blueSB, Hosts: hosts})
	if err != nil || g.Project != "blue" {
		t.Fatalf("blue's own grant: %+v %v", g, err)
	}
	out, _, err := tp.sh(t, tp.blueSB, `echo "[$SHARED]"`)
	if err != nil || out != "[blue-value-0123456789]\n" {
		t.Fatalf("blue's command got %q %v, want blue's value", out, err)
	}
	// The operator granting red's SHARED gets red's value in red's sandbox.
	if _, err := tp.s.Grant(context.Background(), "SHARED", GrantRequest{SandboxID: tp.redSB, Hosts: hosts}); err != nil {
		t.Fatal(err)
	}
	if out, _, err := tp.sh(t, tp.redSB, `echo "[$SHARED]"`); err != nil || out != "[red-value-0123456789]\n" {
		t.Fatalf("red's command got %q %v, want red's value", out, err)
	}
}

// Attack: blue's admin lists, deletes and revokes across the line; it
// sees only blue's, and red's are answered as missing and unchanged.
func TestSecretsListsAndDeletesStayInTheirProject(t *testing.T) {
	tp := newTwoProjects(t)
	blue := key("blue", tenant.Admin)
	redGrant, err := tp.s.Grant(key("red", tenant.Admin), "RED_ONLY", GrantRequest{SandboxID: tp.redSB, Hosts: []string{"a.test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, asked := range []string{"", "red"} {
		l, err := tp.s.List(blue, asked)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range l {
			if i.Project != "blue" {
				t.Errorf("blue's list (project %q) shows %s of %s", asked, i.Name, i.Project)
			}
		}
	}
	if gs, err := tp.s.Grants(blue, ""); err != nil || len(gs) != 0 {
		t.Errorf("blue's grants: %+v %v", gs, err)
	}
	if gs, err := tp.s.Grants(blue, tp.redSB); err != nil || len(gs) != 0 {
		t.Errorf("blue's grants of red's sandbox: %+v %v", gs, err)
	}
	sameMissing(t, "delete red's secret", tp.s.Delete(blue, "", "RED_ONLY"), tp.s.Delete(blue, "", "NO_SUCH"), "RED_ONLY", "NO_SUCH")
	sameMissing(t, "revoke red's grant", tp.s.Revoke(blue, redGrant.ID), tp.s.Revoke(blue, "sg-0000000000000000"), redGrant.ID, "sg-0000000000000000")
	if err := tp.s.Delete(blue, "red", "RED_ONLY"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("blue deleting in project red: %v, want not found", err)
	}
	l, err := tp.s.List(context.Background(), "red")
	if err != nil || len(l) != 2 {
		t.Fatalf("red's secrets after blue's attempts: %+v %v", l, err)
	}
	if gs, _ := tp.s.Grants(context.Background(), tp.redSB); len(gs) != 1 || gs[0].State != "active" {
		t.Errorf("red's grant after blue's attempts: %+v", gs)
	}
	if all, _ := tp.s.List(context.Background(), ""); len(all) != 3 {
		t.Errorf("the operator lists %d secrets, want 3", len(all))
	}
}

// The record: a secret's events are of its project, also when the
// operator sets one for a project.
func TestSecretEventsCarryTheirProject(t *testing.T) {
	tp := newTwoProjects(t)
	if _, err := tp.s.Set(context.Background(), "blue", "OPS", []byte("ops-value-0123456789")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tp.events(t, "secret.set") {
		got = append(got, e.Project)
	}
	if strings.Join(got, " ") != "red blue red blue" {
		t.Errorf("secret.set events of projects %q", got)
	}
	evs, err := tp.log.Query(key("blue", tenant.Reviewer), store.AuditFilter{Kind: "secret"})
	if err != nil || len(evs) != 2 {
		t.Errorf("blue's reviewer reads %d secret events, want its 2: %v", len(evs), err)
	}
}
