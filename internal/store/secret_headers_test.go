package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A brokered grant's headers survive the store; a grant without them
// comes back with none (the broker then uses Authorization only).
func TestSecretGrantHeaders(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.PutSandbox(ctx, fullSandbox("sb")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSecret(ctx, &Secret{Name: "TOK", Sealed: []byte{1}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*SecretGrant{
		{ID: "sg-1", Secret: "TOK", SandboxID: "sb", Mode: "broker", Env: "TOK", Hosts: []string{"a.test"}, Placeholder: "p", Headers: []string{"X-Api-Key", "Authorization"}, Created: t0, Expires: t0.Add(time.Hour)},
		{ID: "sg-2", Secret: "TOK", SandboxID: "sb", Mode: "broker", Env: "TOK", Hosts: []string{"a.test"}, Placeholder: "q", Created: t0, Expires: t0.Add(time.Hour)},
	} {
		if err := s.PutSecretGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	g1, err := s.GetSecretGrant(ctx, "sg-1")
	if err != nil || !slices.Equal(g1.Headers, []string{"X-Api-Key", "Authorization"}) {
		t.Fatalf("sg-1: %+v %v", g1, err)
	}
	g2, err := s.GetSecretGrant(ctx, "sg-2")
	if err != nil || g2.Headers != nil {
		t.Fatalf("sg-2: %+v %v", g2, err)
	}
}
