package manager

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Files gives the daemon's own access to a running sandbox's files (no
// policy; the agent's is internal/filesapi's).
func (m *Manager) Files(ctx context.Context, id string) (runtime.Files, error) {
	sb, err := m.runtimeSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	f, ok := sb.(runtime.Files)
	if !ok {
		return nil, fmt.Errorf("backend %s has no file access: %w", m.cfg.Backend.Name(), errdefs.ErrUnsupported)
	}
	return f, nil
}
