package snapshots

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Deleting a snapshot template takes its name away at once: it is no
// longer listed and no new sandbox starts from it. Sandboxes already
// made from it keep working: the versions they started from (their seed,
// which a reset restores again, and the base the template GC keeps for
// them) stay until no sandbox that is not stopped uses them, and go at
// the next delete of the name or the next daemon start.

// Delete deletes the snapshot template name of the caller's project
// (the operator: any project's). Another project's, or a name that is
// no template, is not found; a shared template (built-in or imported)
// is refused: it is read-only to projects.
func (s *Snapshots) Delete(ctx context.Context, name string) error {
	if s.dir == "" || s.core == nil {
		return fmt.Errorf("template %q: %w", name, errdefs.ErrNotFound)
	}
	if _, err := s.builtins.Get(name); err == nil {
		return fmt.Errorf("template %q is a shared template, not a snapshot: shared templates are read-only to projects, the operator's to remove: %w", name, errdefs.ErrDenied)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, _, err := s.snapshot(name)
	if err != nil || !tenant.Of(ctx).Sees(sf.owner()) {
		return fmt.Errorf("template %q: %w", name, errdefs.ErrNotFound)
	}
	// record-before-act: an unrecorded delete does not happen
	if err := s.core.Record(ctx, audit.Entry{Kind: "snapshot.delete", Payload: map[string]any{"snapshot": name, "project": sf.owner(), "version": sf.Version}}); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.dir, name, "current")); err != nil {
		return err
	}
	s.pruneLocked(ctx, name)
	return nil
}

// pruneLocked removes the versions of a deleted (no "current") snapshot
// template that no sandbox not stopped started from, and its dir when it
// is left empty. Under s.mu.
func (s *Snapshots) pruneLocked(ctx context.Context, name string) {
	dir := filepath.Join(s.dir, name)
	if _, err := os.Stat(filepath.Join(dir, "current")); err == nil {
		return // made again meanwhile
	}
	inUse, err := s.versionsInUse(ctx, name)
	if err != nil {
		s.core.Logf("snapshot %s: keep its versions: %v", name, err)
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || inUse[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			s.core.Logf("snapshot %s: remove version %s: %v", name, e.Name(), err)
		}
	}
	_ = os.Remove(dir) // fails unless empty
}

// versionsInUse are the versions of template name that sandboxes not
// stopped (of any project) started from.
func (s *Snapshots) versionsInUse(ctx context.Context, name string) (map[string]bool, error) {
	sbs, err := s.core.Store().ListSandboxes(tenant.With(ctx, tenant.OperatorPrincipal), "")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, sb := range sbs {
		if sb.Template == name && sb.State != "stopped" {
			out[sb.TemplateVersion] = true
		}
	}
	return out, nil
}

// pruneDeleted prunes every deleted snapshot template (at start: what a
// delete kept for sandboxes that have stopped since).
func (s *Snapshots) pruneDeleted() {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range ents {
		if e.IsDir() {
			s.pruneLocked(context.Background(), e.Name())
		}
	}
}
