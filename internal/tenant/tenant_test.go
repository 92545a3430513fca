package tenant

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

func TestRolesAreOrdered(t *testing.T) {
	order := []Role{Agent, Reviewer, Admin, Operator}
	for i, a := range order {
		for j, b := range order {
			if got := a.AtLeast(b); got != (i >= j) {
				t.Errorf("%s.AtLeast(%s) = %v", a, b, got)
			}
		}
	}
	for _, bad := range []Role{"", "root", "Admin"} {
		if bad.AtLeast(Agent) || Operator.AtLeast(bad) {
			t.Errorf("unknown role %q is ranked", bad)
		}
	}
	if _, err := ParseKeyRole("operator"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a key may be the operator: %v", err)
	}
}

// A context with no principal is the daemon's own work; a key sees
// only its project and makes objects only there.
func TestPrincipals(t *testing.T) {
	ctx := context.Background()
	if !Of(ctx).IsOperator() || Scope(ctx) != "" {
		t.Fatal("a bare context is not the operator")
	}
	if p, err := NewObjectProject(ctx, ""); err != nil || p != Default {
		t.Fatalf("the operator's new object goes to %q, %v", p, err)
	}
	if _, err := NewObjectProject(ctx, "Bad"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a bad project name: %v", err)
	}
	key := With(ctx, Principal{Project: "red", Role: Admin, KeyID: "k-1"})
	if Scope(key) != "red" || !Of(key).Sees("red") || Of(key).Sees("blue") || Of(key).Sees("") {
		t.Fatalf("red's admin: scope %q", Scope(key))
	}
	if _, err := NewObjectProject(key, "blue"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("red's key made an object in blue: %v", err)
	}
	if p, err := NewObjectProject(key, ""); err != nil || p != "red" {
		t.Fatalf("red's key's new object goes to %q, %v", p, err)
	}
	// A principal with no project sees nothing (never every project).
	if (Principal{Role: Admin}).Sees("") || (Principal{Role: Admin}).Sees("red") {
		t.Fatal("a key of no project sees objects")
	}
	for _, ok := range []string{"a", "team-a", "p0123456789012345678901234567890123456789"[:40]} {
		if CheckProject(ok) != nil {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "A", "1a", "-a", "a b", "a/b", "a" + string(make([]byte, 40))} {
		if CheckProject(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
