package store

import (
	"context"
	"fmt"
)

// OutputBytes is how many bytes of output the store keeps for the execs
// of project's sandboxes (a quota's usage: internal/quotas). It reads
// every output row of the project (the blobs' sizes, not their data).
func (s *Store) OutputBytes(ctx context.Context, project string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(length(o.data)), 0) FROM outputs o
		JOIN execs e ON e.id = o.exec_id JOIN sandboxes s ON s.id = e.sandbox_id WHERE s.project = ?`, project).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: output bytes of project %q: %w", project, err)
	}
	return n, nil
}

// ExecOutputBytes is how many bytes of output the store keeps for exec
// execID (0: none, or no such exec).
func (s *Store) ExecOutputBytes(ctx context.Context, execID string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(length(data)), 0) FROM outputs WHERE exec_id = ?`, execID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: output bytes of exec %q: %w", execID, err)
	}
	return n, nil
}
