package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// Approval is a command held for a human.
type Approval struct {
	ID, SandboxID, TaskID string
	Line, Cwd             string
	// Request is the prompt shown to the approver (caller's JSON).
	Request     json.RawMessage
	RequestedBy string
	State       string
	Created     time.Time
	Deadline    time.Time // the request waits until then
	Decided     *time.Time
	DecidedBy   string
	Reason      string
	GrantID     string
}

const approvalCols = `id, sandbox_id, task_id, line, cwd, request, requested_by, state, created, deadline, decided, decided_by, reason, grant_id`

// PutApproval records a new approval request.
func (s *Store) PutApproval(ctx context.Context, a *Approval) error {
	if a == nil || a.ID == "" || a.SandboxID == "" {
		return fmt.Errorf("store: put approval: %w", invalidf("id and sandbox are required"))
	}
	req, err := rawJSON("request", a.Request)
	if err != nil || req == nil {
		return fmt.Errorf("store: put approval %q: %w", a.ID, invalidf("request must be JSON"))
	}
	created, err := nanos("created", a.Created)
	if err != nil {
		return fmt.Errorf("store: put approval: %w", err)
	}
	deadline, err := nanos("deadline", a.Deadline)
	if err != nil {
		return fmt.Errorf("store: put approval: %w", err)
	}
	decided, err := optNanos("decided", a.Decided)
	if err != nil {
		return fmt.Errorf("store: put approval: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO approvals (`+approvalCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.SandboxID, a.TaskID, a.Line, a.Cwd, req, a.RequestedBy, a.State, created, deadline, decided, a.DecidedBy, a.Reason, a.GrantID)
	if err != nil {
		switch {
		case isDuplicate(err):
			return fmt.Errorf("store: approval %q already exists: %w", a.ID, errdefs.ErrConflict)
		case isForeignKey(err):
			return fmt.Errorf("store: put approval: sandbox %q: %w", a.SandboxID, errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: put approval %q: %w", a.ID, classify(err))
	}
	return nil
}

// GetApproval returns one approval (ErrNotFound if unknown).
func (s *Store) GetApproval(ctx context.Context, id string) (*Approval, error) {
	a, err := scanApproval(s.r.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: approval %q: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get approval %q: %w", id, err)
	}
	return a, nil
}

// ListApprovals returns approvals, oldest first, filtered by sandbox and
// state when those are not empty.
func (s *Store) ListApprovals(ctx context.Context, sandboxID, state string) ([]*Approval, error) {
	return s.ListProjectApprovals(ctx, sandboxID, state, "")
}

// ListProjectApprovals is ListApprovals of one project's sandboxes
// ("": every project's).
func (s *Store) ListProjectApprovals(ctx context.Context, sandboxID, state, project string) ([]*Approval, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals
		WHERE (?1 = '' OR sandbox_id = ?1) AND (?2 = '' OR state = ?2)
		AND (?3 = '' OR sandbox_id IN (SELECT id FROM sandboxes WHERE project = ?3)) ORDER BY created, id`, sandboxID, state, project)
	if err != nil {
		return nil, fmt.Errorf("store: list approvals: %w", err)
	}
	defer rows.Close()
	out := []*Approval{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list approvals: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// DecideApproval moves a pending approval to its final state. Deciding one
// that is no longer pending is ErrConflict: the first decision stands.
func (s *Store) DecideApproval(ctx context.Context, id, state string, at time.Time, by, reason, grantID string) error {
	if state != ApprovalApproved && state != ApprovalDenied && state != ApprovalExpired {
		return fmt.Errorf("store: decide approval: %w", invalidf("state %q", state))
	}
	n, err := nanos("decided", at)
	if err != nil {
		return fmt.Errorf("store: decide approval: %w", err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE approvals SET state = ?, decided = ?, decided_by = ?, reason = ?, grant_id = ?
		WHERE id = ? AND state = 'pending'`, state, n, by, reason, grantID, id)
	if err != nil {
		return fmt.Errorf("store: decide approval %q: %w", id, classify(err))
	}
	if k, _ := res.RowsAffected(); k == 1 {
		return nil
	}
	a, err := s.GetApproval(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("approval %s is already %s: %w", id, a.State, errdefs.ErrConflict)
}

func scanApproval(sc scanner) (*Approval, error) {
	var (
		a                 Approval
		req               []byte
		created, deadline int64
		decided           sql.NullInt64
	)
	if err := sc.Scan(&a.ID, &a.SandboxID, &a.TaskID, &a.Line, &a.Cwd, &req, &a.RequestedBy, &a.State, &created, &deadline, &decided, &a.DecidedBy, &a.Reason, &a.GrantID); err != nil {
		return nil, err
	}
	a.Request = toRaw(req)
	a.Created, a.Deadline = fromNanos(created), fromNanos(deadline)
	a.Decided = fromOptNanos(decided)
	return &a, nil
}

// Grant is an approval's lasting effect: what it lets through, until when.
type Grant struct {
	ID, SandboxID, TaskID, ApprovalID string
	Scope, Line, Cwd                  string
	Classes                           []string
	Created, Expires                  time.Time
	CreatedBy                         string
}

// PutGrant records a grant.
func (s *Store) PutGrant(ctx context.Context, g *Grant) error {
	if g == nil || g.ID == "" || g.SandboxID == "" || g.ApprovalID == "" {
		return fmt.Errorf("store: put grant: %w", invalidf("id, sandbox and approval are required"))
	}
	classes, err := stringsJSON("classes", g.Classes)
	if err != nil {
		return fmt.Errorf("store: put grant: %w", err)
	}
	created, err := nanos("created", g.Created)
	if err != nil {
		return fmt.Errorf("store: put grant: %w", err)
	}
	expires, err := nanos("expires", g.Expires)
	if err != nil {
		return fmt.Errorf("store: put grant: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO grants (id, sandbox_id, task_id, approval_id, scope, line, cwd, classes, created, expires, created_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.ID, g.SandboxID, g.TaskID, g.ApprovalID, g.Scope, g.Line, g.Cwd, classes, created, expires, g.CreatedBy)
	if err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("store: put grant: sandbox or approval: %w", errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: put grant %q: %w", g.ID, classify(err))
	}
	return nil
}

// ActiveGrants returns a sandbox's grants that have not expired at now.
func (s *Store) ActiveGrants(ctx context.Context, sandboxID string, now time.Time) ([]*Grant, error) {
	n, err := nanos("now", now)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, sandbox_id, task_id, approval_id, scope, line, cwd, classes, created, expires, created_by
		FROM grants WHERE sandbox_id = ? AND expires > ? ORDER BY created, id`, sandboxID, n)
	if err != nil {
		return nil, fmt.Errorf("store: grants: %w", err)
	}
	defer rows.Close()
	out := []*Grant{}
	for rows.Next() {
		var g Grant
		var classes []byte
		var created, expires int64
		if err := rows.Scan(&g.ID, &g.SandboxID, &g.TaskID, &g.ApprovalID, &g.Scope, &g.Line, &g.Cwd, &classes, &created, &expires, &g.CreatedBy); err != nil {
			return nil, err
		}
		if g.Classes, err = fromStringsJSON("classes", classes); err != nil {
			return nil, err
		}
		g.Created, g.Expires = fromNanos(created), fromNanos(expires)
		out = append(out, &g)
	}
	return out, rows.Err()
}

// BreakGlass is an operator's override of a sandbox's policy.
type BreakGlass struct {
	ID, SandboxID, Actor, Reason string
	Created, Expires             time.Time
}

// PutBreakGlass records an override.
func (s *Store) PutBreakGlass(ctx context.Context, b *BreakGlass) error {
	if b == nil || b.ID == "" || b.SandboxID == "" || b.Reason == "" {
		return fmt.Errorf("store: break glass: %w", invalidf("id, sandbox and reason are required"))
	}
	created, err := nanos("created", b.Created)
	if err != nil {
		return err
	}
	expires, err := nanos("expires", b.Expires)
	if err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO break_glass (id, sandbox_id, actor, reason, created, expires) VALUES (?, ?, ?, ?, ?, ?)`,
		b.ID, b.SandboxID, b.Actor, b.Reason, created, expires); err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("store: break glass: sandbox %q: %w", b.SandboxID, errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: break glass: %w", classify(err))
	}
	return nil
}

// BreakGlasses returns a sandbox's overrides, newest first; with active
// set, only those not expired at now.
func (s *Store) BreakGlasses(ctx context.Context, sandboxID string, active bool, now time.Time) ([]*BreakGlass, error) {
	n := int64(0)
	if active {
		n = now.UnixNano()
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, sandbox_id, actor, reason, created, expires FROM break_glass
		WHERE sandbox_id = ? AND expires > ? ORDER BY created DESC, id`, sandboxID, n)
	if err != nil {
		return nil, fmt.Errorf("store: break glass: %w", err)
	}
	defer rows.Close()
	out := []*BreakGlass{}
	for rows.Next() {
		var b BreakGlass
		var created, expires int64
		if err := rows.Scan(&b.ID, &b.SandboxID, &b.Actor, &b.Reason, &created, &expires); err != nil {
			return nil, err
		}
		b.Created, b.Expires = fromNanos(created), fromNanos(expires)
		out = append(out, &b)
	}
	return out, rows.Err()
}

// Approve moves a pending approval to approved and records its grant, in
// one transaction: there is never a grant without its approval, nor an
// approval said given without its grant.
func (s *Store) Approve(ctx context.Context, id string, at time.Time, by, reason string, g *Grant) error {
	n, err := nanos("decided", at)
	if err != nil {
		return err
	}
	classes, err := stringsJSON("classes", g.Classes)
	if err != nil {
		return err
	}
	created, err := nanos("created", g.Created)
	if err != nil {
		return err
	}
	expires, err := nanos("expires", g.Expires)
	if err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: approve: %w", classify(err))
	}
	defer rollback(tx)
	res, err := tx.ExecContext(ctx, `UPDATE approvals SET state = 'approved', decided = ?, decided_by = ?, reason = ?, grant_id = ?
		WHERE id = ? AND state = 'pending'`, n, by, reason, g.ID, id)
	if err != nil {
		return fmt.Errorf("store: approve %q: %w", id, classify(err))
	}
	if k, _ := res.RowsAffected(); k != 1 {
		return fmt.Errorf("approval %s is no longer pending: %w", id, errdefs.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO grants (id, sandbox_id, task_id, approval_id, scope, line, cwd, classes, created, expires, created_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.ID, g.SandboxID, g.TaskID, id, g.Scope, g.Line, g.Cwd, classes, created, expires, g.CreatedBy); err != nil {
		return fmt.Errorf("store: approve %q: grant: %w", id, classify(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: approve %q: %w", id, classify(err))
	}
	return nil
}
