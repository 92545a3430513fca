package snapshots

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// A sandbox whose user's home is not /home/sandbox (the E2B door's
// /home/user) cannot be snapshotted: the snapshot would silently leave
// the home's files behind. It is refused as unsupported, nothing kept;
// a default sandbox still can be.
func TestSnapshotOfARenamedHomeIsRefused(t *testing.T) {
	ctx := context.Background()
	s, m, _ := onFake(t, t.TempDir())
	sb, err := m.Create(ctx, sandbox.CreateRequest{User: runtime.User{Name: "user", Home: "/home/user"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Snapshot(ctx, sb.ID, "e2b-home", false)
	if !errors.Is(err, errdefs.ErrUnsupported) {
		t.Fatalf("snapshot of a /home/user sandbox: %v, want unsupported", err)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("list after the refusal: %+v %v", list, err)
	}
	def, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, def.ID, "default-home", false); err != nil {
		t.Errorf("snapshot of a default sandbox: %v", err)
	}
}
