package api

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Approvals is what the API uses of the approvals module
// (approvals.Approvals): the held commands and the decisions on them,
// and break-glass. Deciding needs a reviewer, break-glass an admin
// (policy.go's routes).
type Approvals interface {
	List(ctx context.Context, sandboxID, state string) ([]*approvals.Approval, error)
	Get(ctx context.Context, id string) (*approvals.Approval, error)
	Approve(ctx context.Context, id string, req approvals.ApproveRequest) (*approvals.Approval, error)
	Deny(ctx context.Context, id, reason string) (*approvals.Approval, error)
	BreakGlass(ctx context.Context, id, reason string, d time.Duration) (*approvals.BreakGlass, error)
}

// noApprovals is a daemon without the approvals module: every call
// refused (its core denies what the policy would hold).
type noApprovals struct{}

var errNoApprovals = fmt.Errorf("this daemon has no approvals (no approvals module): %w", errdefs.ErrUnsupported)

func (noApprovals) List(context.Context, string, string) ([]*approvals.Approval, error) {
	return nil, errNoApprovals
}
func (noApprovals) Get(context.Context, string) (*approvals.Approval, error) {
	return nil, errNoApprovals
}
func (noApprovals) Approve(context.Context, string, approvals.ApproveRequest) (*approvals.Approval, error) {
	return nil, errNoApprovals
}
func (noApprovals) Deny(context.Context, string, string) (*approvals.Approval, error) {
	return nil, errNoApprovals
}
func (noApprovals) BreakGlass(context.Context, string, string, time.Duration) (*approvals.BreakGlass, error) {
	return nil, errNoApprovals
}
