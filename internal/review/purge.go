package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

// PurgeResult says what a purge removed.
type PurgeResult struct {
	Before      time.Time `json:"before"`
	TaskResults int       `json:"task_results"`
	Outputs     int64     `json:"outputs"`
	AuditBlobs  int64     `json:"audit_blobs"`
}

// Purge removes what is older than d: finished tasks' result directories
// (bundles included), stored command output and audit blobs. Records
// (sandboxes, execs, tasks, approvals) and the audit events themselves
// stay, so the chain still verifies; the purge is itself recorded first,
// so a missing blob is explained.
func (r *Review) Purge(ctx context.Context, d time.Duration) (*PurgeResult, error) {
	if d <= 0 {
		return nil, fmt.Errorf("purge needs a positive age: %w", errdefs.ErrInvalid)
	}
	if r.c == nil {
		return nil, fmt.Errorf("review: not attached: %w", errdefs.ErrUnsupported)
	}
	before := r.c.Now().Add(-d)
	if err := r.c.Record(ctx, audit.Entry{Kind: audit.PurgeKind, Payload: map[string]any{"older_than": d.String(), "blobs_before": before}}); err != nil {
		return nil, err
	}
	res := &PurgeResult{Before: before}
	st := r.c.Store()
	ids, err := st.TasksFinishedBefore(ctx, before)
	if err != nil {
		return nil, err
	}
	if res.TaskResults, err = r.removeResults(ids); err != nil {
		return nil, err
	}
	if res.Outputs, err = st.PurgeOutputs(ctx, before); err != nil {
		return nil, err
	}
	if res.AuditBlobs, err = st.PurgeAuditBlobs(ctx, before); err != nil {
		return nil, err
	}
	r.c.Logf("purged what is older than %s: %+v", d, res)
	return res, nil
}

// removeResults removes the result directories of tasks ids; n is how
// many there were.
func (r *Review) removeResults(ids []string) (n int, err error) {
	if r.cfg.TaskDir == "" {
		return 0, nil // no task directory: no results kept
	}
	for _, id := range ids {
		dir := filepath.Join(r.cfg.TaskDir, id, "result")
		if _, err := os.Stat(dir); err == nil {
			if err := os.RemoveAll(dir); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
