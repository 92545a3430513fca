package snapshots

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// Attack: an agent on a template the operator holds more strictly takes
// a snapshot (of any name, a fork's included) and starts a sandbox from
// it, to shed the template's section of the policy file. The snapshot's
// sandboxes keep it: their policy layers the base's section first, and a
// snapshot of a snapshot keeps the whole line. A section of the
// snapshot's own name that would relax the base's is refused.
func TestASnapshotKeepsItsBasesPolicy(t *testing.T) {
	f, err := policy.Parse([]byte("version: 1\ntemplates:\n  host:\n    classes: {network: deny}\n  named:\n    classes: {network: allow}\n  tighter:\n    classes: {build: ask}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, m, _ := onFakeWith(t, t.TempDir(), f)
	ctx := context.Background()
	sources := func(tpl string) ([]string, error) {
		sb, err := m.Create(ctx, sandbox.CreateRequest{Template: tpl})
		if err != nil {
			return nil, err
		}
		defer m.Destroy(ctx, sb.ID)
		return sb.PolicySources, nil
	}
	snapshot := func(from, name string) {
		sb, err := m.Create(ctx, sandbox.CreateRequest{Template: from})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Destroy(ctx, sb.ID)
		if _, err := s.Snapshot(ctx, sb.ID, name, true); err != nil {
			t.Fatal(err)
		}
	}
	snapshot("host", "shed")
	if got, err := sources("shed"); err != nil || !slices.Equal(got, []string{"defaults", "file", "template:host"}) {
		t.Fatalf("a snapshot of host: sources %v, %v; want host's section", got, err)
	}
	snapshot("shed", "shed2") // and of that snapshot
	if got, err := sources("shed2"); err != nil || !slices.Contains(got, "template:host") {
		t.Fatalf("a snapshot of a snapshot of host: sources %v, %v; want host's section", got, err)
	}
	snapshot("host", "tighter") // its own section may tighten
	if got, err := sources("tighter"); err != nil || !slices.Equal(got, []string{"defaults", "file", "template:host", "template:tighter"}) {
		t.Fatalf("a snapshot with a tightening section: %v, %v", got, err)
	}
	snapshot("host", "named") // named after a section that relaxes host's
	if _, err := sources("named"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a snapshot named after a relaxing section started: %v", err)
	}
}
