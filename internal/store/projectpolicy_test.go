package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// A project's policy layer is kept verbatim, cleared with nil, refused
// for a removed or missing project, and not valid JSON is refused.
func TestProjectPolicy(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.PutProject(ctx, &Project{ID: "team-a", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	layer := []byte(`{"classes":{"network":"deny"}}`)
	if err := s.SetProjectPolicy(ctx, "team-a", layer); err != nil {
		t.Fatal(err)
	}
	p, err := s.GetProject(ctx, "team-a")
	if err != nil || string(p.Policy) != string(layer) {
		t.Fatalf("policy read back: %q %v", p.Policy, err)
	}
	if d, _ := s.GetProject(ctx, "default"); d.Policy != nil {
		t.Errorf("another project got a policy: %q", d.Policy)
	}
	if err := s.SetProjectPolicy(ctx, "team-a", []byte(`{`)); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("invalid JSON: %v", err)
	}
	if err := s.SetProjectPolicy(ctx, "missing", layer); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a missing project: %v", err)
	}
	if err := s.SetProjectPolicy(ctx, "team-a", nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.GetProject(ctx, "team-a"); p.Policy != nil {
		t.Errorf("cleared policy: %q", p.Policy)
	}
}
